"""A hand-written SGD loop that updates each parameter in place and clears its gradient.

expect: -
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(16)

x = torch.randn(256, 4)
y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
x, y = x.to(device), y.to(device)
lr = 0.01
for epoch in range(200):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad
            p.grad = None
    if epoch % 50 == 0:
        print(epoch, loss.item())
