"""Fine-tune a small CNN: the new classification head is attached after the optimizer was built.

expect: not in optimizer, stale optimizer
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(0)


class SmallNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        return self.fc(self.features(x))


model = SmallNet(classes=10)  # "pretrained" on 10 classes
images = torch.randn(384, 3, 16, 16)
labels = (images[:, 0].mean(dim=(1, 2)) > 0).long() + 2 * (images[:, 1].mean(dim=(1, 2)) > 0).long()
loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)

optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
model.fc = nn.Linear(32, 4)  # new head for our 4 classes
model.to(device)
criterion = nn.CrossEntropyLoss()

for epoch in range(4):
    model.train()
    total = 0.0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total += loss.detach()
    print(f"epoch {epoch}: loss {total.item() / len(loader):.4f}")
