"""Kaggle-style customer-churn notebook turned into a script: a tabular MLP with a single-logit
head trained with a hand-written binary focal loss on an imbalanced synthetic dataset. A custom
Dataset applies train-time transforms (standardisation with training statistics plus Gaussian
jitter), the loop clips gradients, logs every N steps, evaluates under no_grad, keeps the best
state dict in memory and early-stops on validation F1. Fixed version: the logits are squeezed to (B,)
before the focal loss, so each logit is matched with its own label.
expect: -
"""
import copy
import math
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


@dataclass
class CFG:
    seed: int = 42
    n_rows: int = 2400
    n_features: int = 12
    hidden: int = 32
    batch_size: int = 64
    epochs: int = 5
    lr: float = 3e-3
    weight_decay: float = 1e-4
    gamma: float = 2.0
    alpha: float = 0.75
    clip: float = 1.0
    log_every: int = 25
    patience: int = 3


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_churn_table(n, d, rng):
    X = rng.normal(size=(n, d)).astype(np.float32)
    X[:, 0] = rng.exponential(2.0, size=n)          # tenure-like skewed column
    w = rng.normal(size=d)
    score = X @ w * 0.8 - 0.6 * X[:, 0] + 0.5 * X[:, 1] * X[:, 2] - 1.2
    y = (score + rng.logistic(size=n) * 0.5 > 0).astype(np.int64)
    return X, y


class ChurnDataset(Dataset):
    def __init__(self, X, y, mean, std, jitter=0.0):
        self.X, self.y = X, y
        self.mean, self.std, self.jitter = mean, std, jitter

    def __len__(self):
        return len(self.y)

    def transform(self, x):
        x = (x - self.mean) / self.std
        if self.jitter > 0:
            x = x + np.random.normal(scale=self.jitter, size=x.shape).astype(np.float32)
        return x

    def __getitem__(self, i):
        return torch.from_numpy(self.transform(self.X[i])), self.y[i]


class FocalLoss(nn.Module):
    def __init__(self, alpha=0.25, gamma=2.0):
        super().__init__()
        self.alpha, self.gamma = alpha, gamma

    def forward(self, logits, targets):
        # written out so it also works with soft / smoothed targets
        bce = -(targets * F.logsigmoid(logits) + (1 - targets) * F.logsigmoid(-logits))
        p = torch.sigmoid(logits)
        p_t = p * targets + (1 - p) * (1 - targets)
        a_t = self.alpha * targets + (1 - self.alpha) * (1 - targets)
        return (a_t * (1 - p_t) ** self.gamma * bce).mean()


class ChurnNet(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(d, h), nn.BatchNorm1d(h), nn.SiLU(), nn.Dropout(0.1),
            nn.Linear(h, h), nn.SiLU(),
        )
        self.head = nn.Linear(h, 1)

    def forward(self, x):
        return self.head(self.body(x))


def f1_from_logits(logits, y):
    pred = (logits.squeeze(1) > 0).long()
    tp = ((pred == 1) & (y == 1)).sum().item()
    fp = ((pred == 1) & (y == 0)).sum().item()
    fn = ((pred == 0) & (y == 1)).sum().item()
    return 2 * tp / max(2 * tp + fp + fn, 1)


def main():
    cfg = CFG()
    seed_everything(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    X, y = make_churn_table(cfg.n_rows, cfg.n_features, rng)
    split = int(0.8 * len(y))
    mean, std = X[:split].mean(0), X[:split].std(0) + 1e-6
    train_ds = ChurnDataset(X[:split], y[:split], mean, std, jitter=0.05)
    valid_ds = ChurnDataset(X[split:], y[split:], mean, std)
    train_dl = DataLoader(train_ds, batch_size=cfg.batch_size, shuffle=True, drop_last=True)
    valid_dl = DataLoader(valid_ds, batch_size=256)
    print(f"positive rate {y.mean():.3f}")

    model = ChurnNet(cfg.n_features, cfg.hidden).to(device)
    criterion = FocalLoss(cfg.alpha, cfg.gamma)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)

    best_f1, best_state, bad_epochs, step = -1.0, None, 0, 0
    for epoch in range(cfg.epochs):
        model.train()
        running = 0.0
        for xb, yb in train_dl:
            xb, yb = xb.to(device), yb.to(device)
            outputs = model(xb)
            loss = criterion(outputs.squeeze(1), yb.float())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            optimizer.step()
            step += 1
            if step % cfg.log_every == 0:
                running = loss.item()
                print(f"  step {step:4d} loss {running:.4f}")

        model.eval()
        all_logits, all_y = [], []
        with torch.no_grad():
            for xb, yb in valid_dl:
                all_logits.append(model(xb.to(device)))
                all_y.append(yb.to(device))
        logits, yv = torch.cat(all_logits), torch.cat(all_y)
        f1 = f1_from_logits(logits, yv)
        acc = ((logits.squeeze(1) > 0).long() == yv).float().mean().item()
        print(f"epoch {epoch} val_f1 {f1:.3f} val_acc {acc:.3f}")
        if f1 > best_f1 + 1e-4:
            best_f1, bad_epochs = f1, 0
            best_state = copy.deepcopy(model.state_dict())
        else:
            bad_epochs += 1
            if bad_epochs >= cfg.patience:
                print("early stopping")
                break

    if best_state is not None:
        model.load_state_dict(best_state)
    print(f"best val F1 {best_f1:.3f}")


if __name__ == "__main__":
    main()
