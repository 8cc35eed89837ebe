"""BYOL-style self-supervised pretraining on synthetic tabular feature vectors.
An online network (encoder -> projector -> predictor) is trained to predict the
projection produced by a target network for a second augmented view; the target
is an exponential moving average of the online encoder/projector, updated under
torch.no_grad(). As in the BYOL paper the target is run in train mode (BatchNorm
uses batch statistics) but without gradients. After pretraining a nearest-centroid
probe on the frozen encoder measures how linearly separable the features are.
expect: -
"""
import copy
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

IN_DIM, N_CLASSES, N = 32, 4, 2048
centers = torch.randn(N_CLASSES, IN_DIM) * 2.0
labels_all = torch.randint(0, N_CLASSES, (N,))
X_all = centers[labels_all] + torch.randn(N, IN_DIM)


def augment(x):
    # feature dropout + gaussian jitter + random per-sample scaling
    keep = (torch.rand_like(x) > 0.2).float()
    scale = 0.8 + 0.4 * torch.rand(x.shape[0], 1, device=x.device)
    return x * keep * scale + 0.3 * torch.randn_like(x)


def mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.BatchNorm1d(h), nn.ReLU(inplace=True), nn.Linear(h, o))


class Online(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = mlp(IN_DIM, 64, 32)
        self.projector = mlp(32, 64, 16)
        self.predictor = mlp(16, 64, 16)

    def forward(self, x):
        z = self.projector(self.encoder(x))
        return self.predictor(z)


class Target(nn.Module):
    def __init__(self, online):
        super().__init__()
        self.encoder = copy.deepcopy(online.encoder)
        self.projector = copy.deepcopy(online.projector)
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.projector(self.encoder(x))


def regression_loss(p, z):
    p = F.normalize(p, dim=-1)
    z = F.normalize(z, dim=-1)
    return 2 - 2 * (p * z).sum(dim=-1)


@torch.no_grad()
def ema_update(target, online, tau):
    for name in ("encoder", "projector"):
        for pt, po in zip(getattr(target, name).parameters(), getattr(online, name).parameters()):
            pt.mul_(tau).add_(po.detach(), alpha=1 - tau)
        for bt, bo in zip(getattr(target, name).buffers(), getattr(online, name).buffers()):
            bt.copy_(bo)


@torch.no_grad()
def centroid_probe(encoder, X, y):
    encoder.eval()
    feats = F.normalize(encoder(X), dim=-1)
    tr, te = slice(0, 1536), slice(1536, None)
    cents = torch.stack([feats[tr][y[tr] == c].mean(0) for c in range(N_CLASSES)])
    pred = (feats[te] @ cents.T).argmax(1)
    encoder.train()
    return (pred == y[te]).float().mean().item()


online = Online().to(device)
target = Target(online).to(device)
X_all, labels_all = X_all.to(device), labels_all.to(device)

params = list(online.encoder.parameters()) + list(online.projector.parameters()) + list(online.predictor.parameters())
optimizer = torch.optim.AdamW(params, lr=2e-3, weight_decay=1e-4)

STEPS, BATCH, TAU_BASE = 200, 128, 0.99
for step in range(STEPS):
    idx = torch.randint(0, N, (BATCH,), device=device)
    x = X_all[idx]
    v1, v2 = augment(x), augment(x)

    online.train()
    p1, p2 = online(v1), online(v2)
    with torch.no_grad():
        target.train()  # BYOL: target BN uses batch statistics, no gradients
        z1, z2 = target(v1), target(v2)
    loss = (regression_loss(p1, z2) + regression_loss(p2, z1)).mean()

    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()

    tau = 1 - (1 - TAU_BASE) * (math.cos(math.pi * step / STEPS) + 1) / 2
    ema_update(target, online, tau)

    if step % 50 == 0 or step == STEPS - 1:
        print(f"step {step:4d}  byol loss {loss.item():.4f}  tau {tau:.4f}")

acc = centroid_probe(online.encoder, X_all, labels_all)
print(f"nearest-centroid probe accuracy: {acc:.3f}")
