"""A numpy dataset sliced per step and converted with torch.from_numpy(...).to(device) each time.

expect: host copy
"""

import numpy as np
import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
rng = np.random.default_rng(19)
torch.manual_seed(19)

X = rng.normal(size=(5000, 24)).astype(np.float32)
Y = (X[:, :3].sum(1) > 0).astype(np.int64)
model = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(300):
    idx = rng.integers(0, len(X), 64)
    xb = torch.from_numpy(X[idx]).to(device)
    yb = torch.from_numpy(Y[idx]).to(device)
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
