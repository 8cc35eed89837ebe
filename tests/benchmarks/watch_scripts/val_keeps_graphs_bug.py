"""Tabular classifier with a validation pass each epoch: evaluate() runs without torch.no_grad and
returns the mean of the batch losses as a tensor, which the history list keeps (with every graph).

expect: memory growth, grad in eval
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(22)

features = torch.randn(4096, 40)
weights = torch.randn(40, 3)
targets = (features @ weights + 0.5 * torch.randn(4096, 3)).argmax(dim=1)
train = TensorDataset(features[:3072], targets[:3072])
val = TensorDataset(features[3072:], targets[3072:])
train_loader = DataLoader(train, batch_size=64, shuffle=True)
val_loader = DataLoader(val, batch_size=256)

model = nn.Sequential(
    nn.Linear(40, 256), nn.ReLU(), nn.Dropout(0.1), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 3)
).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-4)
criterion = nn.CrossEntropyLoss()


def evaluate(model, loader):
    model.eval()
    losses = []
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        losses.append(criterion(model(x), y))
    model.train()
    return torch.stack(losses).mean()


history = {"train": [], "val": []}
for epoch in range(12):
    running = 0.0
    for x, y in train_loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        running += loss.item()
    history["train"].append(running / len(train_loader))
    history["val"].append(evaluate(model, val_loader))
    print(f"epoch {epoch}: train {history['train'][-1]:.4f} val {history['val'][-1].item():.4f}")
