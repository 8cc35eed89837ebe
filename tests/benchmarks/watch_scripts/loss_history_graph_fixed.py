"""Keeps every loss value, detached, to plot the curve later.

expect: -
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(11)


class AutoEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(100, 32), nn.ReLU(), nn.Linear(32, 8))
        self.dec = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 100))

    def forward(self, x):
        return self.dec(self.enc(x))


data = torch.randn(3000, 100)
model = AutoEncoder().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
losses = []
for _ in range(400):
    batch = data[torch.randint(0, 3000, (64,))].to(device)
    loss = ((model(batch) - batch) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.detach())
curve = [float(v) for v in losses[::50]]
print("loss curve", [round(v, 3) for v in curve])
