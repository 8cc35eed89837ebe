"""The three calls in the right order: zero_grad, backward, step.

expect: -
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(12)

x = torch.linspace(-3, 3, 600).unsqueeze(1)
y = torch.sin(x) + 0.1 * torch.randn_like(x)
model = nn.Sequential(nn.Linear(1, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
x, y = x.to(device), y.to(device)
for it in range(300):
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if it % 100 == 0:
        print(it, loss.item())
