"""CIFAR-style recipe: StepLR(step_size=10, gamma=0.1) stepped once per epoch.

expect: -
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(10)

images = torch.randn(640, 3, 8, 8)
labels = (images.mean(dim=(1, 2, 3)) > 0).long()
loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(16 * 64, 2)).to(
    device
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.1)
criterion = nn.CrossEntropyLoss()

for epoch in range(8):
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        optimizer.zero_grad()
        criterion(model(x), y).backward()
        optimizer.step()
    scheduler.step()
    print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.2e}")
