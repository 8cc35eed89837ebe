"""Transfer learning for a small image classifier: pretrain, freeze, re-head.

A compact ResNet-like CNN is first pretrained on a 10-class synthetic "shapes"
dataset (16x16 images of oriented bars and blobs). For the downstream 4-class
task the backbone is frozen with requires_grad_(False) and kept in eval mode so
its BatchNorm statistics stay fixed, and the 10-way classification head is
replaced with a fresh 4-way linear layer. Only trainable parameters are handed
to the fine-tuning optimizer (SGD + momentum, constant lr), and a
checkpoint dict of the best head is kept in memory. Bug: the fine-tuning
optimizer is built before the head is swapped, so it holds the old (now unused)
10-way head and never updates the new 4-way head, which stays at its random init.

expect: not in optimizer, stale optimizer
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(7)
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")

CFG = dict(img=16, pre_classes=10, ft_classes=4, pre_steps=80, ft_steps=120, bs=32,
           pre_lr=2e-3, ft_lr=0.01)


def synth_images(n, n_classes, gen, shift=0.0):
    """Bars with class-dependent orientation + class-dependent blob position."""
    s = CFG["img"]
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, s), torch.linspace(-1, 1, s), indexing="ij")
    y = torch.randint(0, n_classes, (n,), generator=gen)
    theta = (y.float() + shift) * math.pi / n_classes
    phase = torch.rand(n, generator=gen) * 2 * math.pi
    u = xx[None] * torch.cos(theta)[:, None, None] + yy[None] * torch.sin(theta)[:, None, None]
    bars = torch.sin(6 * u + phase[:, None, None])
    cx = torch.cos(2 * theta)[:, None, None] * 0.5
    blob = torch.exp(-((xx[None] - cx) ** 2 + yy[None] ** 2) / 0.1)
    img = torch.stack([bars, blob, bars * blob], 1) + 1.0 * torch.randn(n, 3, s, s, generator=gen)
    return img, y


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = nn.Sequential() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(h)) + self.skip(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 12, 3, 1, 1, bias=False), nn.BatchNorm2d(12), nn.ReLU(),
            Block(12, 24, 2), Block(24, 32, 2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.features(x))


def accuracy(model, x, y, bs=256):
    model.eval()
    hits = 0
    with torch.no_grad():
        for i in range(0, len(x), bs):
            hits += (model(x[i:i + bs].to(device)).argmax(1).cpu() == y[i:i + bs]).sum().item()
    return hits / len(x)


def pretrain(model, gen):
    x, y = synth_images(3000, CFG["pre_classes"], gen)
    opt = torch.optim.Adam(model.parameters(), lr=CFG["pre_lr"])
    model.train()
    for step in range(CFG["pre_steps"]):
        idx = torch.randint(0, len(x), (CFG["bs"],), generator=gen)
        xb, yb = x[idx].to(device), y[idx].to(device)
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"[pretrain] step {step} loss {loss.item():.3f}")
    print(f"[pretrain] acc {accuracy(model, x[:1000], y[:1000]):.3f}")


def main():
    gen = torch.Generator().manual_seed(7)
    model = TinyResNet(CFG["pre_classes"]).to(device)
    pretrain(model, gen)

    # ---- downstream fine-tuning: linear probe on frozen features ----
    for p in model.features.parameters():
        p.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params, lr=CFG["ft_lr"], momentum=0.9, weight_decay=1e-4)
    model.fc = nn.Linear(model.fc.in_features, CFG["ft_classes"]).to(device)

    xtr, ytr = synth_images(2000, CFG["ft_classes"], gen, shift=0.5)
    xva, yva = synth_images(600, CFG["ft_classes"], gen, shift=0.5)
    best = {"acc": 0.0, "state": None}
    for step in range(CFG["ft_steps"]):
        model.train()
        model.features.eval()  # frozen backbone: keep BN running stats fixed
        idx = torch.randint(0, len(xtr), (CFG["bs"],), generator=gen)
        xb, yb = xtr[idx].to(device), ytr[idx].to(device)
        loss = F.cross_entropy(model(xb), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if (step + 1) % 40 == 0:
            acc = accuracy(model, xva, yva)
            print(f"[finetune] step {step + 1} loss {loss.item():.3f} val_acc {acc:.3f}")
            if acc > best["acc"]:
                best = {"acc": acc, "step": step + 1, "state": copy.deepcopy(model.fc.state_dict())}
    print(f"best val acc {best['acc']:.3f}")


if __name__ == "__main__":
    main()
