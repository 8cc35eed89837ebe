"""Tiny DDPM on a 2-D "two spirals" point cloud. An MLP predicts the noise added at a random
timestep (sinusoidal timestep embedding, frequencies kept as a buffer on the device), trained with
the simple epsilon-MSE objective, linear warm-up then cosine decay via LambdaLR stepped every
batch, gradient clipping, and an EMA copy of the denoiser updated under no_grad that is used for
sampling. The running loss is averaged for the log line every 50 steps. Bug: the per-step loss is
appended to the `running` list without detach(), so every step's autograd graph (activations of the
denoiser) stays alive for the whole run and memory grows step after step.

expect: memory growth
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def two_spirals(n, noise=0.05):
    t = torch.rand(n) * 3 * math.pi
    sign = torch.where(torch.rand(n) < 0.5, -1.0, 1.0)
    x = torch.stack([t * torch.cos(t), t * torch.sin(t)], 1) * sign[:, None] / (3 * math.pi)
    return x + noise * torch.randn_like(x)


class TimeEmbedding(nn.Module):
    def __init__(self, dim, max_period=1000.0):
        super().__init__()
        half = dim // 2
        freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
        self.register_buffer("freqs", freqs)

    def forward(self, t):
        args = t.float()[:, None] * self.freqs[None, :]
        return torch.cat([torch.sin(args), torch.cos(args)], dim=-1)


class Denoiser(nn.Module):
    def __init__(self, hidden=96, temb=32):
        super().__init__()
        self.temb = TimeEmbedding(temb)
        self.t_proj = nn.Sequential(nn.Linear(temb, hidden), nn.SiLU())
        self.inp = nn.Linear(2, hidden)
        self.blocks = nn.ModuleList([nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden)) for _ in range(3)])
        self.out = nn.Linear(hidden, 2)

    def forward(self, x, t):
        h = self.inp(x) + self.t_proj(self.temb(t))
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(F.silu(h))


T = 100
betas = torch.linspace(1e-4, 0.05, T, device=device)
alphas = 1.0 - betas
alpha_bar = torch.cumprod(alphas, 0)

data = two_spirals(4096).to(device)
model = Denoiser().to(device)
ema = copy.deepcopy(model).eval()
for p in ema.parameters():
    p.requires_grad_(False)

steps, warmup, batch = 300, 30, 256
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: (s + 1) / warmup if s < warmup else 0.5 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup))))


@torch.no_grad()
def ema_update(decay=0.99):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.lerp_(pm, 1.0 - decay)


@torch.no_grad()
def sample(net, n=512):
    x = torch.randn(n, 2, device=device)
    for i in reversed(range(T)):
        t = torch.full((n,), i, device=device, dtype=torch.long)
        eps = net(x, t)
        x = (x - betas[i] / torch.sqrt(1 - alpha_bar[i]) * eps) / torch.sqrt(alphas[i])
        if i > 0:
            x = x + torch.sqrt(betas[i]) * torch.randn_like(x)
    return x


running = []
model.train()
for step in range(steps):
    idx = torch.randint(0, data.shape[0], (batch,), device=device)
    x0 = data[idx]
    t = torch.randint(0, T, (batch,), device=device)
    noise = torch.randn_like(x0)
    ab = alpha_bar[t][:, None]
    xt = ab.sqrt() * x0 + (1 - ab).sqrt() * noise

    loss = F.mse_loss(model(xt, t), noise)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    ema_update()

    running.append(loss)
    if (step + 1) % 50 == 0:
        avg = torch.stack(running[-50:]).mean().item()
        print(f"step {step + 1:4d}  loss {avg:.4f}  lr {sched.get_last_lr()[0]:.2e}")

samples = sample(ema)
radius = samples.norm(dim=1)
print(f"EMA samples: mean radius {radius.mean().item():.3f} (data {data.norm(dim=1).mean().item():.3f})")
