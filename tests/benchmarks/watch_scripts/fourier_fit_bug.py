"""Curve fitting with a Fourier-feature MLP, written without torch.optim as a teaching
example: a small network regresses a noisy damped oscillation y(t) from 512 samples using
full-batch gradient descent with heavy-ball momentum and decoupled weight decay, all
implemented by hand. The random Fourier projection is a fixed (non-trainable) matrix, the
step size has a short linear warm-up, and the loop logs the training and held-out MSE every
25 iterations.
Bug: the hand-written update rebinds the loop variable (p = p * (1 - lr*wd);
p = p - lr * v) instead of updating the parameter in place, so the model's parameters
never change: gradients and momentum buffers are non-zero but the full-batch training
loss is exactly the same at every iteration.

expect: flat loss
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(7)
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")


def target_fn(t):
    return torch.exp(-0.3 * t) * torch.sin(4.0 * t) + 0.3 * torch.cos(1.3 * t)


t_train = torch.linspace(0, 6, 512).unsqueeze(1)
y_train = target_fn(t_train) + 0.05 * torch.randn_like(t_train)
t_test = torch.rand(256, 1) * 6
y_test = target_fn(t_test)
t_train, y_train, t_test, y_test = (v.to(device) for v in (t_train, y_train, t_test, y_test))


class FourierMLP(nn.Module):
    def __init__(self, n_freq=32, sigma=2.0, hidden=64):
        super().__init__()
        # fixed random projection: a buffer, not a parameter
        self.register_buffer("B", torch.randn(1, n_freq) * sigma)
        self.net = nn.Sequential(
            nn.Linear(2 * n_freq, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 1),
        )

    def forward(self, t):
        proj = 2 * math.pi * t @ self.B
        return self.net(torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1))


model = FourierMLP().to(device)
mse = nn.MSELoss()

ITERS = 300
BASE_LR, MOMENTUM, WD, WARMUP = 0.05, 0.9, 1e-4, 20
velocity = {name: torch.zeros_like(p) for name, p in model.named_parameters()}

for it in range(1, ITERS + 1):
    lr = BASE_LR * min(1.0, it / WARMUP)
    pred = model(t_train)
    loss = mse(pred, y_train)
    model.zero_grad(set_to_none=True)
    loss.backward()

    with torch.no_grad():
        for name, p in model.named_parameters():
            v = velocity[name]
            v.mul_(MOMENTUM).add_(p.grad)
            p = p * (1 - lr * WD)
            p = p - lr * v

    if it % 25 == 0 or it == 1:
        with torch.no_grad():
            test_loss = mse(model(t_test), y_test)
        print(f"iter {it:3d}  lr {lr:.3f}  train_mse {loss.item():.5f}  test_mse {test_loss.item():.5f}")
