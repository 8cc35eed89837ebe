"""Research-repo style neural surrogate: a residual MLP regresses a synthetic 'physics' response
(a smooth nonlinear function of 8 input parameters plus noise). Inputs are standardised with
buffers registered on the model, training uses gradient accumulation over 2 micro-batches,
OneCycleLR stepped once per optimizer step, gradient clipping and bfloat16 autocast when running
on the CPU; validation RMSE is printed each epoch. Fixed version: the hidden residual layers are
registered through an nn.ModuleList, so the optimizer updates them.
expect: -
"""
import contextlib
import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


@dataclass
class SurrogateConfig:
    n_params: int = 8
    width: int = 48
    depth: int = 3
    n_train: int = 2048
    n_val: int = 512
    micro_batch: int = 32
    accum_steps: int = 2
    epochs: int = 4
    max_lr: float = 3e-3
    clip_norm: float = 2.0
    seed: int = 7
    tags: list = field(default_factory=lambda: ["surrogate", "resmlp"])


def simulate(n, d, gen):
    x = torch.rand(n, d, generator=gen) * 2 - 1
    y = (torch.sin(3 * x[:, 0]) * x[:, 1] + 0.5 * x[:, 2] ** 2 - x[:, 3] * x[:, 4]
         + 0.3 * torch.cos(2 * x[:, 5] + x[:, 6]) + 0.1 * x[:, 7])
    y = y + 0.02 * torch.randn(n, generator=gen)
    return x * 5 + 2, y.unsqueeze(1)  # raw, un-normalised parameter ranges


class ResidualMLP(nn.Module):
    def __init__(self, cfg, x_mean, x_std, device=None):
        super().__init__()
        self.register_buffer("x_mean", x_mean.to(device))
        self.register_buffer("x_std", x_std.to(device))
        self.stem = nn.Linear(cfg.n_params, cfg.width, device=device)
        self.hidden = nn.ModuleList([nn.Linear(cfg.width, cfg.width, device=device) for _ in range(cfg.depth)])
        self.norm = nn.LayerNorm(cfg.width, device=device)
        self.out = nn.Linear(cfg.width, 1, device=device)

    def forward(self, x):
        h = F.gelu(self.stem((x - self.x_mean) / self.x_std))
        for layer in self.hidden:
            h = h + F.gelu(layer(h)) / math.sqrt(len(self.hidden))
        return self.out(self.norm(h))


def main():
    cfg = SurrogateConfig()
    torch.manual_seed(cfg.seed)
    np.random.seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    x_tr, y_tr = simulate(cfg.n_train, cfg.n_params, gen)
    x_va, y_va = simulate(cfg.n_val, cfg.n_params, gen)
    x_tr, y_tr, x_va, y_va = (t.to(device) for t in (x_tr, y_tr, x_va, y_va))

    model = ResidualMLP(cfg, x_tr.mean(0), x_tr.std(0), device=device)
    first_hidden_init = [l.weight.detach().clone() for l in model.hidden]
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.max_lr, weight_decay=1e-4)
    steps_per_epoch = cfg.n_train // (cfg.micro_batch * cfg.accum_steps)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=cfg.max_lr, total_steps=cfg.epochs * steps_per_epoch, pct_start=0.25)
    amp = (lambda: torch.autocast("cpu", dtype=torch.bfloat16)) if device == "cpu" else contextlib.nullcontext
    print(f"{sum(p.numel() for p in model.parameters())} trainable parameters")

    for epoch in range(cfg.epochs):
        model.train()
        perm = torch.randperm(cfg.n_train, device=device)
        optimizer.zero_grad(set_to_none=True)
        for i in range(cfg.n_train // cfg.micro_batch):
            idx = perm[i * cfg.micro_batch:(i + 1) * cfg.micro_batch]
            with amp():
                pred = model(x_tr[idx])
            loss = F.mse_loss(pred.float(), y_tr[idx]) / cfg.accum_steps
            loss.backward()
            if (i + 1) % cfg.accum_steps == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)

        model.eval()
        with torch.no_grad():
            rmse = F.mse_loss(model(x_va), y_va).sqrt().item()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.2e} val_rmse {rmse:.4f}")

    drift = max((l.weight.detach() - w0).abs().max().item() for l, w0 in zip(model.hidden, first_hidden_init))
    print(f"max change of hidden-layer weights: {drift:.3e}")


if __name__ == "__main__":
    main()
