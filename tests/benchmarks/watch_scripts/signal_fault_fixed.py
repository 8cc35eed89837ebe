"""Kaggle-style notebook converted to a script: binary classification of synthetic vibration
windows (machine fault vs healthy) from hand-crafted spectral features. A custom Dataset computes
log-FFT-band features on the fly with random gain / time-shift augmentation, the model is an MLP
with dropout, a warm-up LambdaLR is stepped per batch, train AUC is computed at the end of each
epoch from the logits collected during the epoch, and the best model is kept for a final
hold-out evaluation. Fixed version: the per-step logits are detached
before they are collected, and the best model is a deep copy taken at the best epoch.
expect: -
"""
import copy
import resource

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

CFG = dict(seed=2024, win=64, n_bands=16, n_train=1536, n_val=512, bs=64, epochs=3,
           lr=1e-3, warmup=40, hidden=256)


def make_windows(n, win, rng):
    t = np.arange(win) / win
    y = rng.random(n) < 0.4
    base = rng.uniform(3, 9, size=(n, 1))
    sig = np.sin(2 * np.pi * base * t) + 0.6 * rng.normal(size=(n, win))
    fault_f = rng.uniform(30, 40, size=(n, 1))
    sig[y] += 0.5 * np.sin(2 * np.pi * fault_f[y] * t)
    return sig.astype(np.float32), y.astype(np.float32)


class VibrationDataset(Dataset):
    def __init__(self, windows, labels, n_bands, augment=False, seed=0):
        self.windows, self.labels, self.n_bands = windows, labels, n_bands
        self.augment = augment
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.labels)

    def featurize(self, w):
        spec = np.abs(np.fft.rfft(w))[1:]
        bands = np.array_split(spec, self.n_bands)
        return np.log1p(np.array([b.mean() for b in bands], dtype=np.float32))

    def __getitem__(self, i):
        w = self.windows[i]
        if self.augment:
            w = np.roll(w, self.rng.integers(len(w))) * self.rng.uniform(0.8, 1.25)
        return torch.from_numpy(self.featurize(w)), torch.tensor(self.labels[i])


def auc(scores, labels):
    order = torch.argsort(scores)
    ranks = torch.empty_like(order, dtype=torch.float32)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=torch.float32, device=scores.device)
    pos = labels > 0.5
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return ((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)).item()


def main():
    torch.manual_seed(CFG["seed"])
    rng = np.random.default_rng(CFG["seed"])
    Xtr, ytr = make_windows(CFG["n_train"], CFG["win"], rng)
    Xva, yva = make_windows(CFG["n_val"], CFG["win"], rng)
    train_dl = DataLoader(VibrationDataset(Xtr, ytr, CFG["n_bands"], augment=True, seed=1),
                          batch_size=CFG["bs"], shuffle=True)
    val_dl = DataLoader(VibrationDataset(Xva, yva, CFG["n_bands"]), batch_size=512)

    model = nn.Sequential(
        nn.Linear(CFG["n_bands"], CFG["hidden"]), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(CFG["hidden"], CFG["hidden"]), nn.ReLU(), nn.Dropout(0.2),
        nn.Linear(CFG["hidden"], 1),
    ).to(device)
    criterion = nn.BCEWithLogitsLoss(pos_weight=torch.tensor([1.5], device=device))
    optimizer = torch.optim.Adam(model.parameters(), lr=CFG["lr"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / CFG["warmup"]))

    best_auc, best_model = 0.0, None
    for epoch in range(CFG["epochs"]):
        model.train()
        epoch_logits, epoch_labels = [], []
        for step, (xb, yb) in enumerate(train_dl):
            xb, yb = xb.to(device), yb.to(device)
            outputs = model(xb).squeeze(-1)
            loss = criterion(outputs, yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            epoch_logits.append(outputs.detach())
            epoch_labels.append(yb)
        train_auc = auc(torch.cat(epoch_logits).detach(), torch.cat(epoch_labels))

        model.eval()
        with torch.no_grad():
            val_scores = torch.cat([model(xb.to(device)).squeeze(-1) for xb, _ in val_dl])
        val_auc = auc(val_scores, torch.from_numpy(yva).to(device))
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"epoch {epoch} loss {loss.item():.4f} train_auc {train_auc:.4f} "
              f"val_auc {val_auc:.4f} peak_rss {rss_mb:.0f} MB")
        if val_auc > best_auc:
            best_auc = val_auc
            best_model = copy.deepcopy(model)

    best_model.eval()
    with torch.no_grad():
        scores = torch.cat([best_model(xb.to(device)).squeeze(-1) for xb, _ in val_dl])
    print(f"best val_auc {best_auc:.4f}; restored model val_auc {auc(scores, torch.from_numpy(yva).to(device)):.4f}")


if __name__ == "__main__":
    main()
