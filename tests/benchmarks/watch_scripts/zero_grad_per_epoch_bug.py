"""MLP classifier whose optimizer.zero_grad() sits in the epoch loop instead of the batch loop.

expect: missing zero_grad, growing grads
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(4)

points = torch.randn(960, 2) * 2
labels = ((points**2).sum(1) < 2.5).long()
loader = DataLoader(TensorDataset(points, labels), batch_size=32, shuffle=True)
net = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
criterion = nn.CrossEntropyLoss()

for epoch in range(5):
    optimizer.zero_grad()
    epoch_loss = torch.zeros((), device=device)
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        loss = criterion(net(xb), yb)
        loss.backward()
        optimizer.step()
        epoch_loss += loss.detach()
    print(f"epoch {epoch}: {epoch_loss.item() / len(loader):.4f}")
