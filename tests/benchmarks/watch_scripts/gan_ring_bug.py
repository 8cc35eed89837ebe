"""Vanilla GAN on a 2-D ring of eight Gaussians, with an EMA generator.

The classic toy GAN benchmark: real samples come from 8 Gaussians arranged on
a circle of radius 2. A small MLP generator maps 8-d noise to 2-d points and an
MLP discriminator with LeakyReLU scores them; both use Adam(0.5, 0.999) and
the non-saturating BCE-with-logits loss. The discriminator step uses
fake.detach() so that it does not backpropagate into the generator. Bug: the
generator loss is also computed on fake.detach(), so g_loss has no path to the
generator's parameters; G never receives a gradient and never changes. An
exponential-moving-average copy of the generator is updated under no_grad after
every generator step and used for evaluation (mode coverage and mean distance
of generated points to the nearest mode).

expect: no gradient, zero grad at step
"""
import argparse
import copy
import math

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--iters", type=int, default=300)
parser.add_argument("--batch", type=int, default=128)
parser.add_argument("--zdim", type=int, default=8)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--ema", type=float, default=0.99)
parser.add_argument("--seed", type=int, default=3)
args = parser.parse_args()

torch.manual_seed(args.seed)
device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")

ANGLES = torch.arange(8, dtype=torch.float32) * (2 * math.pi / 8)
MODES = torch.stack([2 * torch.cos(ANGLES), 2 * torch.sin(ANGLES)], dim=1).to(device)


def sample_real(n):
    idx = torch.randint(0, 8, (n,), device=device)
    return MODES[idx] + 0.05 * torch.randn(n, 2, device=device)


class Generator(nn.Module):
    def __init__(self, zdim, h=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(zdim, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 2))

    def forward(self, z):
        return self.net(z)


class Discriminator(nn.Module):
    def __init__(self, h=128):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, h), nn.LeakyReLU(0.2), nn.Linear(h, h), nn.LeakyReLU(0.2), nn.Linear(h, 1))

    def forward(self, x):
        return self.net(x).squeeze(-1)


@torch.no_grad()
def ema_update(ema_model, model, decay):
    for pe, p in zip(ema_model.parameters(), model.parameters()):
        pe.mul_(decay).add_(p, alpha=1 - decay)


@torch.no_grad()
def mode_stats(gen, n=2000):
    x = gen(torch.randn(n, args.zdim, device=device))
    d = torch.cdist(x, MODES)
    nearest = d.min(dim=1)
    covered = torch.bincount(nearest.indices[nearest.values < 0.5], minlength=8) > 20
    return nearest.values.mean().item(), int(covered.sum().item())


G, D = Generator(args.zdim).to(device), Discriminator().to(device)
G_ema = copy.deepcopy(G).eval()
for p in G_ema.parameters():
    p.requires_grad_(False)
opt_g = torch.optim.Adam(G.parameters(), lr=args.lr, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=args.lr, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
ones = torch.ones(args.batch, device=device)
zeros = torch.zeros(args.batch, device=device)

for it in range(1, args.iters + 1):
    real = sample_real(args.batch)
    z = torch.randn(args.batch, args.zdim, device=device)
    fake = G(z)

    # --- discriminator ---
    d_loss = bce(D(real), ones) + bce(D(fake.detach()), zeros)
    opt_d.zero_grad(set_to_none=True)
    d_loss.backward()
    opt_d.step()

    # --- generator (non-saturating) ---
    g_loss = bce(D(fake.detach()), ones)
    opt_g.zero_grad(set_to_none=True)
    g_loss.backward()
    opt_g.step()
    ema_update(G_ema, G, args.ema)

    if it % 50 == 0:
        dist, cov = mode_stats(G_ema)
        print(f"it {it:4d}  d_loss {d_loss.item():.3f}  g_loss {g_loss.item():.3f}  "
              f"ema: dist-to-mode {dist:.3f}  modes covered {cov}/8")
