"""Denoising autoencoder on 64-dimensional synthetic signals with an exponential moving average
(EMA) of its weights for evaluation, as diffusion and semi-supervised code bases do: a
hand-written EMA class deep-copies the model at start and has an `update(model)` method with
decay 0.99; validation and the final checkpoint use the EMA copy. Adam, 6 epochs, the validation
reconstruction error of the EMA model per epoch. Fixed version: the loop calls ema.update(model) after every optimizer step.
Written from: https://github.com/acids-ircam/diffusion_models/issues/10
expect: -
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class EMA:
    def __init__(self, model, decay=0.99):
        self.model = copy.deepcopy(model).eval()
        self.decay, self.steps = decay, 0
        for p in self.model.parameters():
            p.requires_grad_(False)

    def step(self):
        self.steps += 1

    @torch.no_grad()
    def update(self, model):
        d = min(self.decay, (1 + self.steps) / (10 + self.steps))
        for e, p in zip(self.model.parameters(), model.parameters()):
            e.mul_(d).add_(p.detach(), alpha=1 - d)


def signals(n, gen):
    t = torch.linspace(0, 1, 64)
    f = torch.rand(n, 3, 1, generator=gen) * 8 + 1
    a = torch.rand(n, 3, 1, generator=gen)
    return (a * torch.sin(2 * torch.pi * f * t)).sum(1)


def main():
    gen = torch.Generator().manual_seed(12)
    x, xv = signals(1500, gen), signals(500, gen)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 16), nn.GELU(),
                          nn.Linear(16, 128), nn.GELU(), nn.Linear(128, 64)).to(device)
    ema = EMA(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(4):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 64):
            clean = x[perm[i: i + 64]].to(device)
            noisy = clean + 0.3 * torch.randn_like(clean)
            optimizer.zero_grad()
            loss = F.mse_loss(model(noisy), clean)
            loss.backward()
            optimizer.step()
            ema.update(model)
            ema.step()
        with torch.no_grad():
            val = F.mse_loss(ema.model(xv.to(device) + 0.3 * torch.randn(500, 64, device=device)), xv.to(device))
        print(f"epoch {epoch} train {loss.item():.4f} EMA val {val.item():.4f}")


if __name__ == "__main__":
    main()
