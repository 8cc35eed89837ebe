"""Two-stage transfer recipe ("linear probe, then fine-tune", LP-FT) on a synthetic
sensor-classification dataset served by a DataLoader over a numpy-backed Dataset.
Stage 1 trains only the classifier head: the backbone has requires_grad False and
sits in the optimizer as its own param group with lr 0, and the neck is frozen and
not yet in the optimizer. Stage 2 unfreezes everything, gives the backbone group a
small learning rate, registers the neck with optimizer.add_param_group, and decays
all learning rates with an ExponentialLR schedule (gamma 0.7 per epoch).
expect: -
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader

np.random.seed(3)
torch.manual_seed(3)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class SensorDataset(Dataset):
    def __init__(self, n, rng, proj):
        latent = rng.standard_normal((n, 6)).astype(np.float32)
        self.x = np.tanh(latent @ proj) + 0.1 * rng.standard_normal((n, proj.shape[1])).astype(np.float32)
        score = latent[:, 0] * latent[:, 1] + np.sin(2 * latent[:, 2]) + latent[:, 3] ** 2 - 1
        self.y = np.digitize(score, [-0.8, 0.0, 0.8]).astype(np.int64)

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return torch.from_numpy(self.x[i]), int(self.y[i])


rng = np.random.default_rng(3)
proj = rng.standard_normal((6, 24)).astype(np.float32)
train_dl = DataLoader(SensorDataset(2048, rng, proj), batch_size=64, shuffle=True)
val_dl = DataLoader(SensorDataset(512, rng, proj), batch_size=256)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(24, 96), nn.GELU(), nn.Linear(96, 96), nn.GELU())
        self.neck = nn.Sequential(nn.LayerNorm(96), nn.Linear(96, 64), nn.GELU())
        self.head = nn.Linear(64, 4)

    def forward(self, x):
        return self.head(self.neck(self.backbone(x)))


def accuracy(model, loader):
    model.eval()
    hit = tot = 0
    with torch.no_grad():
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            hit += (model(xb).argmax(-1) == yb).sum().item()
            tot += yb.numel()
    model.train()
    return hit / tot


model = Classifier().to(device)
model.backbone.requires_grad_(False)
model.neck.requires_grad_(False)
optimizer = torch.optim.Adam([
    {"params": model.head.parameters(), "lr": 3e-3, "name": "head"},
    {"params": model.backbone.parameters(), "lr": 0.0, "name": "backbone"},
])
criterion = nn.CrossEntropyLoss(label_smoothing=0.05)


def run_epoch():
    running = torch.zeros((), device=device)
    for xb, yb in train_dl:
        xb, yb = xb.to(device), yb.to(device)
        loss = criterion(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        running += loss.detach()
    return (running / len(train_dl)).item()


PROBE_EPOCHS, FT_EPOCHS = 3, 6
for ep in range(PROBE_EPOCHS):
    tl = run_epoch()
    print(f"probe  ep{ep} train_loss={tl:.3f} val_acc={accuracy(model, val_dl):.3f}")

# stage 2: unfreeze, give backbone a small lr, register the neck
model.backbone.requires_grad_(True)
model.neck.requires_grad_(True)
for group in optimizer.param_groups:
    if group["name"] == "backbone":
        group["lr"] = 5e-4
optimizer.add_param_group({"params": model.neck.parameters(), "lr": 1e-3, "name": "neck"})
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.7)

for ep in range(FT_EPOCHS):
    tl = run_epoch()
    scheduler.step()
    lrs = {g["name"]: f"{g['lr']:.2e}" for g in optimizer.param_groups}
    print(f"ft     ep{ep} train_loss={tl:.3f} val_acc={accuracy(model, val_dl):.3f} lrs={lrs}")
