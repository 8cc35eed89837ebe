"""Transfer learning on tabular data: a "pretrained" 3-layer backbone (trained for a few epochs on
a source task first) is reused for a new 4-class target task with a fresh head. To freeze the
backbone while keeping one optimizer for the whole model (so unfreezing later is one line), the
training step zeroes the backbone's gradients after backward. AdamW with weight decay 0.05,
a warm-up of 20 steps, validation accuracy per epoch. Fixed version: the optimizer holds only the head, so nothing decays the frozen backbone (its
gradients are still zeroed).
Written from: https://github.com/huggingface/diffusers/issues/1009
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def task(n, classes, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 24, generator=gen)
    w = torch.randn(24, classes, generator=torch.Generator().manual_seed(seed + 100))
    return x, (torch.tanh(x @ w) + 0.2 * torch.randn(n, classes, generator=gen)).argmax(1)


backbone = nn.Sequential(nn.Linear(24, 128), nn.GELU(), nn.Linear(128, 128), nn.GELU(), nn.Linear(128, 64), nn.GELU())


def pretrain():
    x, y = task(1000, 6, 1)
    head = nn.Linear(64, 6)
    model = nn.Sequential(backbone, head).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    for _ in range(2):
        for i in range(0, len(x), 100):
            opt.zero_grad()
            F.cross_entropy(model(x[i: i + 100].to(device)), y[i: i + 100].to(device)).backward()
            opt.step()


def main():
    pretrain()
    x, y = task(1000, 4, 2)
    xv, yv = task(400, 4, 3)
    model = nn.Sequential(backbone, nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.AdamW(model[1].parameters(), lr=3e-3, weight_decay=0.05)
    warmup = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 20))
    for epoch in range(4):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 50):
            idx = perm[i: i + 50]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[idx].to(device)), y[idx].to(device))
            loss.backward()
            for p in backbone.parameters():
                p.grad.zero_()
            optimizer.step()
            warmup.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xv.to(device)).argmax(1).cpu() == yv).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} val acc {acc:.3f} backbone norm {backbone[0].weight.norm().item():.3f}")


if __name__ == "__main__":
    main()
