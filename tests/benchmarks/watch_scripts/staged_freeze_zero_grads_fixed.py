"""timm-style fine-tuning with a staged schedule: a pretrained convolutional backbone and a new
head are trained together for one epoch, then the backbone is frozen with requires_grad_(False)
and only the head trains for three more epochs (a common recipe against over-fitting small
datasets). AdamW (weight decay 0.05), a cosine schedule per epoch, and
optimizer.zero_grad(set_to_none=False) to keep gradient buffers allocated between steps. Bug:
with set_to_none=False the frozen parameters keep zero-filled gradients, so AdamW still steps
them: their Adam moments from the first epoch and the decoupled weight decay move the "frozen"
backbone every step.
Written from: https://github.com/open-mmlab/OpenPCDet/issues/845
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def images(n, seed):
    gen = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=gen)
    x = torch.randn(n, 3, 12, 12, generator=gen) * 0.5
    x[torch.arange(n), y, 4:8, 4:8] += 1.0
    return x, y


def make_backbone():
    torch.manual_seed(1)
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten())


def main():
    x, y = images(1200, 1)
    xv, yv = images(300, 2)
    backbone = make_backbone().to(device)
    head = nn.Linear(32, 3).to(device)
    optimizer = torch.optim.AdamW(list(backbone.parameters()) + list(head.parameters()), lr=2e-3, weight_decay=0.05)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=4)
    for epoch in range(4):
        if epoch >= 1:
            backbone.requires_grad_(False)
            backbone.eval()
        else:
            backbone.train()
        head.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 40):
            idx = perm[i: i + 40]
            loss = F.cross_entropy(head(backbone(x[idx].to(device))), y[idx].to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        backbone.eval()
        head.eval()
        with torch.no_grad():
            acc = (head(backbone(xv.to(device))).argmax(1).cpu() == yv).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} val acc {acc:.3f} conv1 norm {backbone[0].weight.norm().item():.4f}")


if __name__ == "__main__":
    main()
