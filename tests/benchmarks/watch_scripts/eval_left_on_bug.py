"""An image classifier with BatchNorm and Dropout: validation switches to eval mode at the end of
each epoch, and training never switches back.

expect: eval mode
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(2)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
        )
        self.drop = nn.Dropout(0.3)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        x = self.block(x).mean(dim=(2, 3))
        return self.head(self.drop(x))


def make(n):
    x = torch.randn(n, 1, 12, 12)
    left, right = x[:, :, :6].mean(dim=(1, 2, 3)), x[:, :, 6:].mean(dim=(1, 2, 3))
    y = (left > right).long() + (x.std(dim=(1, 2, 3)) > 1).long()
    return TensorDataset(x, y)


train = DataLoader(make(512), batch_size=32, shuffle=True)
val = DataLoader(make(128), batch_size=64)
model = ConvNet().to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

model.train()
for epoch in range(4):
    for x, y in train:
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    model.eval()
    correct = torch.zeros((), device=device)
    with torch.no_grad():
        for x, y in val:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(1) == y).sum()
    print(f"epoch {epoch}: val acc {correct.item() / len(val.dataset):.3f}")
