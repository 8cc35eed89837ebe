"""Population counts per map cell from building features, fixed: the head is a log-rate (exp of
the last layer, a softplus would do as well), so the bias initialised to log(mean count) starts the
predictions at the mean count and the gradients flow.

expect: dead units
"""

import math

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(11)

n = 4096
features = torch.rand(n, 16)  # built-up area, road density, night lights, ... (scaled to [0, 1])
rate = 0.2 * torch.exp(1.5 * features[:, :3].sum(1, keepdim=True) - 1.5)
counts = torch.poisson(rate)

head = nn.Linear(64, 1)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), head)
with torch.no_grad():
    head.weight.mul_(0.1)
    head.bias.fill_(math.log(counts.mean().item()))  # "initialise the bias to the mean"
model = model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
features, counts = features.to(device), counts.to(device)

for epoch in range(10):
    perm = torch.randperm(n, device=device)
    total = 0.0
    for i in range(0, n, 128):
        idx = perm[i:i + 128]
        loss = nn.functional.mse_loss(model(features[idx]).exp(), counts[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: mse {total / (n // 128):.4f}")
