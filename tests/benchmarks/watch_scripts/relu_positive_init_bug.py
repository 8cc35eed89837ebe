"""Tabular regression on log-probability features (every feature is negative). The author starts
the hidden layer's weights from small positive values, as a tutorial on 'positive initial weights'
suggested, so every pre-activation is negative for every row: the ReLUs output 0 for all inputs,
no gradient reaches the hidden layer, and the model can only learn its output bias (a constant).
Written from a Cross Validated question (stats.stackexchange.com/q/450100: all-positive features
and negative weights leave the hidden ReLU dead) and an EPFL course thread (weights around 10,
inputs in [-1, 0]).

expect: dead units
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(3)

probs = torch.rand(2048, 12) * 0.98 + 0.01
X = probs.log()  # log-probabilities: all in (-4.6, 0)
y = (X[:, :4].sum(1, keepdim=True) - X[:, 4:8].sum(1, keepdim=True)) / 4

model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
with torch.no_grad():
    for layer in model:
        if isinstance(layer, nn.Linear):
            layer.weight.uniform_(0.0, 0.1)  # "start from small positive weights"
            layer.bias.zero_()
model = model.to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
X, y = X.to(device), y.to(device)

for epoch in range(12):
    perm = torch.randperm(len(X), device=device)
    total = 0.0
    for i in range(0, len(X), 64):
        idx = perm[i:i + 64]
        loss = nn.functional.mse_loss(model(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
    print(f"epoch {epoch}: mse {total / (len(X) // 64):.4f}")
