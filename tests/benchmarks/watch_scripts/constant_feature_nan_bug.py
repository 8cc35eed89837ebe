"""Standardising features with a constant column: 0 / 0 puts NaN into the inputs before training.

expect: non-finite
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(17)

raw = torch.randn(900, 6) * torch.tensor([1.0, 5.0, 0.1, 2.0, 3.0, 1.0])
raw[:, 5] = 1.0  # a sensor that never changes
labels = (raw[:, 0] + raw[:, 1] / 5 > 0).long()
mean, std = raw.mean(0), raw.std(0)
features = (raw - mean) / std
loader = DataLoader(TensorDataset(features, labels), batch_size=30, shuffle=True)
model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(xb.to(device)), yb.to(device)).backward()
        opt.step()
    print("epoch", epoch)
