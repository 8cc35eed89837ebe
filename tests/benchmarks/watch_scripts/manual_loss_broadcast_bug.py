"""A hand-written Huber-like loss on a (B, 1) output against (B,) targets.

expect: broadcast
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(1)


class Regressor(nn.Module):
    def __init__(self, d_in=6, hidden=48):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


def robust_loss(pred, target, delta=1.0):
    err = (pred - target).abs()
    return torch.where(err < delta, 0.5 * err**2, delta * (err - 0.5 * delta)).mean()


x_all = torch.rand(2048, 6) * 4 - 2
y_all = torch.sin(x_all[:, 0]) + x_all[:, 1] * x_all[:, 2] + 0.05 * torch.randn(2048)
model = Regressor().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)

for step in range(250):
    idx = torch.randint(0, 2048, (128,))
    xb, yb = x_all[idx].to(device), y_all[idx].to(device)
    loss = robust_loss(model(xb), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(step, float(loss))
