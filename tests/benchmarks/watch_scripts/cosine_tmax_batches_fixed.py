"""CIFAR-style small CNN on synthetic 3x24x24 images of 10 textured classes with random crops and
flips done on the tensor batch, SGD momentum 0.9 with weight decay 5e-4, label smoothing 0.1 and a
CosineAnnealingLR(T_max=epochs) schedule, test accuracy after each epoch. Fixed version: scheduler.step() is called once per epoch, as T_max is in epochs.
Written from: https://github.com/ivadomed/ivadomed/pull/55
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def textures(n, gen):
    labels = torch.randint(0, 10, (n,), generator=gen)
    freq = (labels.float() + 1) / 3
    grid = torch.arange(28.0)
    waves = torch.sin(freq[:, None, None] * (grid[None, :, None] + grid[None, None, :] * (labels[:, None, None] % 3)))
    images = waves[:, None].repeat(1, 3, 1, 1) * torch.rand(n, 3, 1, 1, generator=gen) + 0.3 * torch.randn(n, 3, 28, 28, generator=gen)
    return images, labels


def augment(x):
    i, j = torch.randint(0, 5, (2,))
    x = x[:, :, i: i + 24, j: j + 24]
    return torch.where(torch.rand(x.shape[0], 1, 1, 1) < 0.5, x.flip(3), x)


def main():
    gen = torch.Generator().manual_seed(8)
    x, y = textures(1200, gen)
    xt, yt = textures(500, gen)
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 36, 10),
    ).to(device)
    epochs = 4
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 100):
            idx = perm[i: i + 100]
            xb, yb = augment(x[idx]).to(device), y[idx].to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb, label_smoothing=0.1)
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xt[:, :, 2:26, 2:26].to(device)).argmax(1).cpu() == yt).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} test acc {acc:.3f}")


if __name__ == "__main__":
    main()
