"""House-price style regression with nn.MSELoss: predictions squeezed to (B,) like the targets.

expect: -
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(0)

features = torch.randn(1024, 12)
price = features @ torch.linspace(-1, 1, 12) + 0.1 * torch.randn(1024)
train = DataLoader(TensorDataset(features, price), batch_size=64, shuffle=True)

model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
loss_fn = nn.MSELoss()

for epoch in range(6):
    running = torch.zeros((), device=device)
    for x, y in train:
        x, y = x.to(device), y.to(device)
        pred = model(x)
        loss = loss_fn(pred.squeeze(-1), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.detach()
    print(f"epoch {epoch} mse {running.item() / len(train):.3f}")
