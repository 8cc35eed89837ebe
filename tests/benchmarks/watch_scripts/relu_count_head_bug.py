"""Population counts per map cell from building features, with a ReLU on the output to keep the
predicted counts non-negative. Following the advice to initialise the last layer's bias to the
data's mean, the author sets it to log(mean count), the right start for a log-rate head, but the
head is a ReLU, not exp: the bias (about -1.6) puts every output below zero, the ReLU returns 0 for
every cell, and no gradient reaches any layer; the model predicts 0 everywhere for the whole run.
Written from jvargasmu/population_estimation#68 ('sometimes the initial solution predicts only
zeros (due to ReLU activation)', with softplus proposed) and Yang7879/3D-RecGAN#6 (zero outputs
traced to dead ReLUs and the initialisation).

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
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), head, nn.ReLU())
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
        loss = nn.functional.mse_loss(model(features[idx]), counts[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: mse {total / (n // 128):.4f}")
