"""Tabular classifier: the validation loop runs under no_grad in eval mode; training sets train mode again.

expect: -
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(3)

x = torch.randn(1200, 20)
y = (x[:, :5].sum(1) > 0).long()
train = DataLoader(TensorDataset(x[:1000], y[:1000]), batch_size=50, shuffle=True)
valid = DataLoader(TensorDataset(x[1000:], y[1000:]), batch_size=50)

model = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.5), nn.Linear(64, 2)).to(
    device
)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()


def evaluate(net, loader):
    net.eval()
    hits = torch.zeros((), device=device)
    with torch.no_grad():
        for xb, yb in loader:
            hits += (net(xb.to(device)).argmax(1) == yb.to(device)).sum()
    return hits.item() / len(loader.dataset)


for epoch in range(5):
    model.train()
    for xb, yb in train:
        opt.zero_grad()
        criterion(model(xb.to(device)), yb.to(device)).backward()
        opt.step()
    print(f"epoch {epoch} valid acc {evaluate(model, valid):.3f}")
