"""Defect detection on an imbalanced binary task (5% positives) with a hand-written binary focal
loss with gamma=0.5 (a "softer" focal loss for a well-separated problem), a 3-layer MLP, Adam at
a high learning rate with no clipping, and the positive-class recall per epoch. Bug: the focal
term is computed as (1 - p) ** gamma and p ** gamma on p = sigmoid(logit) without an epsilon;
once the model is confident, p rounds to exactly 1.0 or 0.0 in float32 and the gradient of
x ** 0.5 at 0 is infinite: the backward produces NaN and the weights become NaN.
Written from: https://github.com/kornia/kornia/issues/918
expect: non-finite
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def focal_loss(logits, targets, gamma=0.5, alpha=0.75):
    p = torch.sigmoid(logits)
    pos = -alpha * (1 - p) ** gamma * targets * torch.log(p.clamp(min=1e-12))
    neg = -(1 - alpha) * p ** gamma * (1 - targets) * torch.log((1 - p).clamp(min=1e-12))
    return (pos + neg).mean()


def main():
    gen = torch.Generator().manual_seed(19)
    y = (torch.rand(3000, generator=gen) < 0.05).float()
    x = torch.randn(3000, 12, generator=gen) + 4.0 * y[:, None] * torch.linspace(1, 0.2, 12)
    model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    for epoch in range(4):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 128):
            idx = perm[i: i + 128]
            optimizer.zero_grad()
            loss = focal_loss(model(x[idx].to(device)).squeeze(1), y[idx].to(device))
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            pred = model(x.to(device)).squeeze(1).cpu() > 0
            recall = (pred & y.bool()).sum().item() / max(y.sum().item(), 1)
        print(f"epoch {epoch} loss {loss.item():.5f} recall {recall:.3f}")


if __name__ == "__main__":
    main()
