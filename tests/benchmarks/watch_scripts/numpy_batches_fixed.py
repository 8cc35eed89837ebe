"""A numpy dataset moved to the device once and indexed there each step.

expect: -
"""

import numpy as np
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
rng = np.random.default_rng(19)
torch.manual_seed(19)

X = rng.normal(size=(5000, 24)).astype(np.float32)
Y = (X[:, :3].sum(1) > 0).astype(np.int64)
X_dev, Y_dev = torch.from_numpy(X).to(device), torch.from_numpy(Y).to(device)  # once
model = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(300):
    idx = torch.randint(0, len(X), (64,), device=device)
    xb, yb = X_dev[idx], Y_dev[idx]
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
