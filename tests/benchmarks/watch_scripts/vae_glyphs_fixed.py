"""Convolution-free VAE on synthetic 12x12 "glyph" images.

Images are rendered from a 3-factor generative process (bar orientation, bar
thickness, blob position) plus pixel noise, giving a dataset with a known low-
dimensional structure.  An MLP encoder outputs mean and log-variance of a 6-D
Gaussian posterior; an MLP decoder outputs Bernoulli logits.  Training maximises the
ELBO with a linear KL warm-up (beta annealed from 0 to 1 over the first 120 steps),
Adam, gradient-norm clipping, a ReduceLROnPlateau scheduler stepped once per epoch on
the validation ELBO, and .item() logging every 30 steps.  Validation runs in eval
mode under no_grad; the best model state is kept in an in-memory checkpoint dict.

expect: -
"""
import copy
import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
np.random.seed(3)
torch.manual_seed(3)

CONFIG = {
    "img": 12,
    "latent_dim": 6,
    "hidden": 256,
    "batch_size": 64,
    "epochs": 6,
    "lr": 1e-3,
    "kl_warmup_steps": 120,
    "clip": 10.0,
}


def render_glyphs(n, size, rng):
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    c = (size - 1) / 2
    out = np.zeros((n, size, size), dtype=np.float32)
    theta = rng.uniform(0, math.pi, n)
    thick = rng.uniform(0.6, 2.0, n)
    bx, by = rng.uniform(2, size - 3, n), rng.uniform(2, size - 3, n)
    for k in range(n):
        d = np.abs((xx - c) * math.sin(theta[k]) - (yy - c) * math.cos(theta[k]))
        bar = (d < thick[k]).astype(np.float32)
        blob = np.exp(-((xx - bx[k]) ** 2 + (yy - by[k]) ** 2) / 3.0)
        out[k] = np.clip(bar + blob, 0, 1)
    out = np.clip(out + rng.normal(0, 0.05, out.shape), 0, 1)
    return out.reshape(n, -1).astype(np.float32)


class VAE(nn.Module):
    def __init__(self, x_dim, hidden, z_dim):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(x_dim, hidden), nn.SiLU(), nn.Linear(hidden, hidden // 2), nn.SiLU())
        self.to_mu = nn.Linear(hidden // 2, z_dim)
        self.to_logvar = nn.Linear(hidden // 2, z_dim)
        self.dec = nn.Sequential(nn.Linear(z_dim, hidden // 2), nn.SiLU(), nn.Linear(hidden // 2, hidden),
                                 nn.SiLU(), nn.Linear(hidden, x_dim))

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.to_mu(h), self.to_logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar) if self.training else mu
        return self.dec(z), mu, logvar


def elbo_terms(x, logits, mu, logvar):
    rec = F.binary_cross_entropy_with_logits(logits, x, reduction="sum") / x.size(0)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp()) / x.size(0)
    return rec, kl


def run():
    cfg = CONFIG
    rng = np.random.default_rng(3)
    data = torch.from_numpy(render_glyphs(4096, cfg["img"], rng))
    train, val = data[:3584].to(device), data[3584:].to(device)
    x_dim = cfg["img"] ** 2

    vae = VAE(x_dim, cfg["hidden"], cfg["latent_dim"]).to(device)
    optimizer = torch.optim.Adam(vae.parameters(), lr=cfg["lr"])
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1)

    global_step = 0
    ckpt = {"val": float("inf")}
    for epoch in range(cfg["epochs"]):
        vae.train()
        order = torch.randperm(len(train), device=device)
        for start in range(0, len(train), cfg["batch_size"]):
            x = train[order[start:start + cfg["batch_size"]]]
            logits, mu, logvar = vae(x)
            rec, kl = elbo_terms(x, logits, mu, logvar)
            beta = min(1.0, global_step / cfg["kl_warmup_steps"])
            loss = rec + beta * kl
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(vae.parameters(), cfg["clip"])
            optimizer.step()
            global_step += 1
            if global_step % 30 == 0:
                print(f"step {global_step:4d}  rec {rec.item():8.3f}  kl {kl.item():7.3f}  beta {beta:.2f}")

        vae.eval()
        with torch.no_grad():
            logits, mu, logvar = vae(val)
            v_rec, v_kl = elbo_terms(val, logits, mu, logvar)
            v_loss = (v_rec + v_kl).item()
        plateau.step(v_loss)
        print(f"epoch {epoch}  val -ELBO {v_loss:.3f}  (rec {v_rec.item():.3f}, kl {v_kl.item():.3f})  "
              f"lr {optimizer.param_groups[0]['lr']:.1e}")
        if v_loss < ckpt["val"]:
            ckpt = {"val": v_loss, "epoch": epoch, "model": copy.deepcopy(vae.state_dict()),
                    "optim": copy.deepcopy(optimizer.state_dict())}
    print(f"best epoch {ckpt.get('epoch')}  val -ELBO {ckpt['val']:.3f}")


if __name__ == "__main__":
    run()
