"""Bernoulli VAE on synthetic binary "glyph" images with KL annealing and a checkpointed decoder.

The data are 12x12 binary images made of random horizontal/vertical strokes and small boxes with
pixel flip noise. The encoder is an MLP producing the mean and log-variance of a diagonal Gaussian
posterior (10-d); the decoder is a deeper MLP whose hidden blocks run under
torch.utils.checkpoint.checkpoint(..., use_reentrant=False) to trade compute for activation memory.
The likelihood is Bernoulli, computed on logits with F.binary_cross_entropy_with_logits. The KL
weight beta is annealed linearly from 0 to 1 over the first 120 steps, so the objective itself
changes during warm-up: the KL term is added back gradually and the total loss stalls while the
model is in fact improving. The per-step loss is kept in a history list (so logging needs no
host sync) and summarised every 20 steps; the negative ELBO is evaluated in eval mode under
no_grad at the end. Bug: the history keeps the loss tensor itself (`history.append(loss)`, no
detach), so every step's autograd graph stays reachable from the list for the whole run and the
number of live graph objects grows step after step.

expect: memory growth
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

random.seed(3)
np.random.seed(3)
torch.manual_seed(3)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

SIDE = 12
PIX = SIDE * SIDE


def make_glyphs(n, rng):
    imgs = np.zeros((n, SIDE, SIDE), dtype=np.float32)
    for k in range(n):
        for _ in range(rng.integers(1, 4)):
            kind = rng.integers(0, 3)
            a, b = sorted(rng.integers(0, SIDE, size=2))
            c = rng.integers(0, SIDE)
            if kind == 0:
                imgs[k, c, a:b + 1] = 1.0
            elif kind == 1:
                imgs[k, a:b + 1, c] = 1.0
            else:
                r, s = rng.integers(0, SIDE - 3, size=2)
                imgs[k, r:r + 3, s:s + 3] = 1.0
    flips = rng.random(imgs.shape) < 0.02
    imgs[flips] = 1.0 - imgs[flips]
    return imgs.reshape(n, PIX)


class Encoder(nn.Module):
    def __init__(self, latent):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(PIX, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.mu = nn.Linear(64, latent)
        self.logvar = nn.Linear(64, latent)

    def forward(self, x):
        h = self.body(x)
        return self.mu(h), self.logvar(h).clamp(-8.0, 8.0)


class Decoder(nn.Module):
    def __init__(self, latent, width=128, n_blocks=3):
        super().__init__()
        self.inp = nn.Linear(latent, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.SiLU()) for _ in range(n_blocks)
        )
        self.out = nn.Linear(width, PIX)

    def forward(self, z):
        h = F.silu(self.inp(z))
        for block in self.blocks:
            if self.training:
                h = h + checkpoint(block, h, use_reentrant=False)
            else:
                h = h + block(h)
        return self.out(h)


class VAE(nn.Module):
    def __init__(self, latent=10):
        super().__init__()
        self.enc = Encoder(latent)
        self.dec = Decoder(latent)

    def forward(self, x):
        mu, logvar = self.enc(x)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


def neg_elbo_terms(logits, x, mu, logvar):
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    return rec, kl


rng = np.random.default_rng(3)
train = torch.from_numpy(make_glyphs(2048, rng)).to(device)
test = torch.from_numpy(make_glyphs(512, rng)).to(device)

vae = VAE().to(device)
opt = torch.optim.Adam(vae.parameters(), lr=2e-3)
STEPS, BATCH, WARMUP = 240, 64, 120
history = []

for step in range(STEPS):
    vae.train()
    idx = torch.randint(0, train.size(0), (BATCH,), device=device)
    x = train[idx]
    logits, mu, logvar = vae(x)
    rec, kl = neg_elbo_terms(logits, x, mu, logvar)
    beta = min(1.0, step / WARMUP)
    loss = rec + beta * kl

    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(vae.parameters(), 5.0)
    opt.step()

    history.append(loss)
    if (step + 1) % 20 == 0:
        window = torch.stack(history[-20:])
        print(f"step {step + 1:4d}  beta {beta:.2f}  loss(mean last 20) {window.mean().item():8.3f}  "
              f"rec {rec.item():7.3f}  kl {kl.item():6.3f}")

vae.eval()
with torch.no_grad():
    logits, mu, logvar = vae(test)
    rec, kl = neg_elbo_terms(logits, test, mu, logvar)
print(f"test -ELBO {(rec + kl).item():.3f}  (rec {rec.item():.3f}, kl {kl.item():.3f})  "
      f"history entries {len(history)}")
