"""Kaggle-notebook style knowledge distillation on a synthetic 10-class 'sensor' dataset: a wider
teacher MLP is fitted first, frozen and put in eval mode, then a small student with BatchNorm and
Dropout is trained by a train_one_epoch / evaluate function pair on a mix of hard-label
cross-entropy and temperature-scaled KL to the teacher's soft targets (teacher forward under
no_grad). Class weights live on the device, a StepLR is stepped once per epoch and the epoch
metrics are collected in a dict. Bug: evaluate() switches the student to eval mode and
train_one_epoch never switches it back, so from the second epoch on the student trains with
Dropout disabled and frozen BatchNorm statistics.
expect: eval mode
"""
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

SEED = 1234
N_CLASSES = 10
N_FEAT = 24
TEMPERATURE = 3.0
ALPHA = 0.6


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def make_sensor_data(n, rng, centers):
    y = rng.integers(0, N_CLASSES, size=n)
    X = centers[y] + rng.normal(scale=1.6, size=(n, N_FEAT))
    X[:, :4] = np.tanh(X[:, :4]) * 3          # saturated channels
    X = X * rng.uniform(0.5, 20.0, size=N_FEAT)  # wildly different sensor scales
    return torch.tensor(X, dtype=torch.float32), torch.tensor(y)


def mlp(width, p_drop):
    return nn.Sequential(
        nn.Linear(N_FEAT, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(p_drop),
        nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(p_drop),
        nn.Linear(width, N_CLASSES),
    )


def fit_teacher(teacher, loader, steps=60):
    opt = torch.optim.Adam(teacher.parameters(), lr=3e-3)
    teacher.train()
    it = iter(loader)
    for _ in range(steps):
        try:
            xb, yb = next(it)
        except StopIteration:
            it = iter(loader)
            xb, yb = next(it)
        loss = F.cross_entropy(teacher(xb.to(device)), yb.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    return teacher


def distill_loss(student_logits, teacher_logits, targets, class_weights):
    hard = F.cross_entropy(student_logits, targets, weight=class_weights)
    soft = F.kl_div(F.log_softmax(student_logits / TEMPERATURE, -1),
                    F.softmax(teacher_logits / TEMPERATURE, -1), reduction="batchmean")
    return ALPHA * soft * TEMPERATURE ** 2 + (1 - ALPHA) * hard


def train_one_epoch(student, teacher, loader, optimizer, class_weights):
    total, n = 0.0, 0
    for xb, yb in loader:
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        with torch.no_grad():
            t_logits = teacher(xb)
        loss = distill_loss(student(xb), t_logits, yb, class_weights)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.detach() * len(yb)
        n += len(yb)
    return (total / n).item()


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct, n, nll = 0, 0, 0.0
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        logits = model(xb)
        nll += F.cross_entropy(logits, yb, reduction="sum").item()
        correct += (logits.argmax(1) == yb).sum().item()
        n += len(yb)
    return {"acc": correct / n, "nll": nll / n}


def main():
    set_seed(SEED)
    rng = np.random.default_rng(SEED)
    centers = rng.normal(scale=1.5, size=(N_CLASSES, N_FEAT))
    X_tr, y_tr = make_sensor_data(2560, rng, centers)
    X_va, y_va = make_sensor_data(1000, rng, centers)
    train_loader = DataLoader(TensorDataset(X_tr, y_tr), batch_size=64, shuffle=True, drop_last=True)
    val_loader = DataLoader(TensorDataset(X_va, y_va), batch_size=500)

    teacher = fit_teacher(mlp(128, 0.2).to(device), train_loader)
    print("teacher", evaluate(teacher, val_loader))

    counts = torch.bincount(y_tr, minlength=N_CLASSES).float()
    class_weights = (counts.sum() / (N_CLASSES * counts)).to(device)
    student = mlp(32, 0.3).to(device)
    optimizer = torch.optim.AdamW(student.parameters(), lr=4e-3, weight_decay=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    bn = student[1]

    history = []
    for epoch in range(4):
        train_loss = train_one_epoch(student, teacher, train_loader, optimizer, class_weights)
        scheduler.step()
        metrics = {"epoch": epoch, "train_loss": round(train_loss, 4),
                   "bn_batches": int(bn.num_batches_tracked), **evaluate(student, val_loader)}
        history.append(metrics)
        print(metrics)
    print(f"best student acc {max(m['acc'] for m in history):.3f}")


if __name__ == "__main__":
    main()
