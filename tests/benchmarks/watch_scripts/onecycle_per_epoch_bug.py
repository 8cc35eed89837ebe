"""torchvision-style CNN training with the one-cycle policy: a small ResNet-like network (two
residual blocks with batch norm) on 3x16x16 synthetic images, random-crop augmentation by
padding and shifting, SGD with Nesterov momentum, OneCycleLR(max_lr=0.1,
total_steps=epochs * len(loader)), label smoothing 0.1, test accuracy each epoch. Bug:
scheduler.step() is called once per epoch (as for StepLR) although OneCycleLR was sized in
batches: after 6 epochs the cycle has advanced 6 of its 228 steps, so the learning rate stays
near its starting value max_lr / 25 and never reaches the peak of the cycle.
Written from: https://github.com/Lightning-AI/pytorch-lightning/issues/5631
expect: lr schedule
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def images(n, seed):
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=gen)
    x = torch.randn(n, 3, 16, 16, generator=gen) * 0.6
    grid = torch.linspace(-1, 1, 16)
    pattern = torch.stack([torch.sin(3 * grid)[None, :].expand(16, 16), torch.sin(3 * grid)[:, None].expand(16, 16),
                           torch.outer(grid, grid), torch.cos(5 * grid)[None, :].expand(16, 16)])
    x += pattern[y][:, None]
    return x, y


def random_crop(x, pad=2):
    padded = F.pad(x, (pad, pad, pad, pad), mode="reflect")
    i, j = torch.randint(0, 2 * pad + 1, (2,))
    return padded[:, :, i: i + x.shape[2], j: j + x.shape[3]]


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


def main():
    x, y = images(2400, 1)
    xt, yt = images(500, 2)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Conv2d(3, 24, 3, padding=1, bias=False), nn.BatchNorm2d(24), nn.ReLU(),
                          Residual(24), nn.MaxPool2d(2), Residual(24), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(24, 4)).to(device)
    epochs = 6
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=epochs * len(loader))
    for epoch in range(epochs):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(random_crop(xb).to(device)), yb.to(device), label_smoothing=0.1)
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xt.to(device)).argmax(1).cpu() == yt).float().mean().item()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.4f} loss {loss.item():.4f} test acc {acc:.3f}")


if __name__ == "__main__":
    main()
