"""SimCLR-style self-supervised pre-training on synthetic 32-d feature vectors drawn from
10 latent clusters. Each sample is augmented twice (Gaussian jitter, random feature
masking, random scaling), an MLP encoder plus projection head embeds both views on the unit
sphere, and an NT-Xent / InfoNCE loss over the 2B x 2B similarity matrix (self-similarities
masked out) pulls the two views together. As in CLIP, the inverse temperature is a
learnable log-scale, clamped from above. After pre-training, the encoder is frozen and a
linear probe is fitted on a small labelled subset to measure representation quality.
Bug: the temperature is initialised at 0.01 with the CLIP clamp of 100 on the scale, and
the loss exponentiates the scaled similarities directly; at init the two views already
have cosine ~0.96, so exp(100 * 0.96) overflows float32 to inf, inf/inf gives NaN in the
loss and every parameter turns NaN after the first optimizer step.

expect: non-finite
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2024)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

D_IN, N_CLUSTERS = 32, 10
centers = torch.randn(N_CLUSTERS, D_IN) * 1.5
mix = torch.randn(D_IN, D_IN) / math.sqrt(D_IN)


def sample(n):
    c = torch.randint(0, N_CLUSTERS, (n,))
    z = centers[c] + 0.7 * torch.randn(n, D_IN)
    return torch.tanh(z @ mix) + 0.05 * torch.randn(n, D_IN), c


x_unlab, _ = sample(8192)
x_probe, y_probe = sample(1000)
x_test, y_test = sample(1000)
x_unlab, x_probe, y_probe, x_test, y_test = (t.to(device) for t in (x_unlab, x_probe, y_probe, x_test, y_test))


def augment(x):
    keep = (torch.rand_like(x) > 0.4).float()
    scale = torch.empty(x.size(0), 1, device=x.device).uniform_(0.8, 1.2)
    return (x * keep * scale) + 0.4 * torch.randn_like(x)


class ContrastiveModel(nn.Module):
    def __init__(self, d_in=D_IN, d_rep=64, d_proj=32, init_temperature=0.01, max_scale=100.0):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, 128), nn.ReLU(), nn.Linear(128, d_rep))
        self.projector = nn.Sequential(nn.ReLU(), nn.Linear(d_rep, 64), nn.ReLU(), nn.Linear(64, d_proj))
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1.0 / init_temperature)))
        self.max_log_scale = math.log(max_scale)

    def forward(self, x):
        return F.normalize(self.projector(self.encoder(x)), dim=-1)

    def scale(self):
        return self.logit_scale.clamp(max=self.max_log_scale).exp()


def nt_xent(z1, z2, scale):
    z = torch.cat([z1, z2], dim=0)                       # (2B, d)
    n = z.size(0)
    sim = scale * (z @ z.t())                            # (2B, 2B)
    self_mask = torch.eye(n, dtype=torch.bool, device=z.device)
    pos_index = torch.arange(n, device=z.device).roll(n // 2)
    exp_sim = torch.exp(sim).masked_fill(self_mask, 0.0)
    pos = exp_sim[torch.arange(n, device=z.device), pos_index]
    return -torch.log(pos / exp_sim.sum(dim=1)).mean()


model = ContrastiveModel().to(device)
optimizer = torch.optim.Adam([
    {"params": list(model.encoder.parameters()) + list(model.projector.parameters()), "lr": 1e-3},
    {"params": [model.logit_scale], "lr": 1e-2},
])

BATCH, STEPS = 256, 300
for step in range(1, STEPS + 1):
    idx = torch.randint(0, x_unlab.size(0), (BATCH,), device=device)
    x = x_unlab[idx]
    z1, z2 = model(augment(x)), model(augment(x))
    loss = nt_xent(z1, z2, model.scale())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if step % 50 == 0 or step == 1:
        with torch.no_grad():
            pos_cos = (z1 * z2).sum(-1).mean()
        print(f"step {step:3d}  loss {loss.item():.4f}  pos_cos {pos_cos.item():.3f}  "
              f"scale {model.scale().item():.2f}")

# ---- linear probe on the frozen encoder
encoder = model.encoder.eval().requires_grad_(False)
probe = nn.Linear(64, N_CLUSTERS).to(device)
probe_opt = torch.optim.Adam(probe.parameters(), lr=1e-2)
with torch.no_grad():
    f_probe, f_test = encoder(x_probe), encoder(x_test)
for _ in range(200):
    probe_loss = F.cross_entropy(probe(f_probe), y_probe)
    probe_opt.zero_grad()
    probe_loss.backward()
    probe_opt.step()
with torch.no_grad():
    acc = (probe(f_test).argmax(1) == y_test).float().mean().item()
print(f"linear probe accuracy: {acc:.3f}  (final contrastive loss {loss.item():.4f})")
