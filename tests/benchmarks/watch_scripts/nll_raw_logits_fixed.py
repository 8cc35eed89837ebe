"""Sensor-fault classification, fixed: F.nll_loss takes the log_softmax of the network's output
(F.cross_entropy on the raw output would be the same loss).

expect: not log-probabilities
"""

import torch
import torch.nn.functional as F
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(8)

n, channels, steps, faults = 3000, 6, 50, 4
signals = torch.randn(n, channels, steps)
kind = torch.randint(0, faults, (n,))
for f in range(1, faults):  # each fault adds a drift on its own channel
    signals[kind == f, f] += torch.linspace(0, 2, steps)

model = nn.Sequential(
    nn.Conv1d(channels, 32, 5, padding=2), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
    nn.Linear(32, faults),
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for epoch in range(5):
    perm = torch.randperm(n)
    for i in range(0, n, 64):
        idx = perm[i:i + 64]
        x, y = signals[idx].to(device), kind[idx].to(device)
        output = model(x)
        loss = F.nll_loss(F.log_softmax(output, dim=1), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
