"""Multi-task 1D-CNN on wearable IMU windows: activity recognition + heart-rate regression.

Synthetic 3-axis accelerometer windows (64 samples) are generated for 5 activities (sitting,
walking, running, cycling, stairs) with activity-specific frequency/amplitude profiles; each window
also has a heart-rate target that depends on activity intensity and a per-subject offset. A shared
Conv1d trunk feeds two heads (5-way classifier, scalar regressor); the two losses are combined
with learned homoscedastic-uncertainty weights (Kendall et al.). Training logs loss/accuracy every
few steps and computes macro-F1 over the epoch (F1 implemented in numpy), then evaluates on a
held-out subject split in eval mode.

expect: -
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

np.random.seed(123)
torch.manual_seed(123)
DEVICE = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
N_CLASSES, WIN, LOG_EVERY = 5, 64, 25


def synth_imu(n_subjects, windows_per_subject):
    freq = np.array([0.2, 1.8, 2.8, 1.2, 1.5])
    amp = np.array([0.05, 0.6, 1.4, 0.5, 0.9])
    hr_base = np.array([70.0, 100.0, 150.0, 120.0, 125.0])
    t = np.arange(WIN) / 32.0
    X, Y, HR = [], [], []
    for s in range(n_subjects):
        offset = np.random.normal(0, 8)
        for _ in range(windows_per_subject):
            a = np.random.randint(N_CLASSES)
            f = freq[a] * np.random.uniform(0.85, 1.15)
            ph = np.random.uniform(0, 2 * np.pi, 3)[:, None]
            sig = amp[a] * np.sin(2 * np.pi * f * t[None, :] + ph) * np.array([[1.0], [0.6], [0.3]])
            sig += 0.2 * np.random.randn(3, WIN)
            X.append(sig.astype(np.float32))
            Y.append(a)
            HR.append((hr_base[a] + offset + np.random.normal(0, 4)) / 100.0)
    return np.stack(X), np.array(Y, dtype=np.int64), np.array(HR, dtype=np.float32)


class IMUWindows(Dataset):
    def __init__(self, X, Y, HR):
        self.X, self.Y, self.HR = X, Y, HR

    def __len__(self):
        return len(self.Y)

    def __getitem__(self, i):
        return self.X[i], self.Y[i], self.HR[i]


class MultiTaskCNN(nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Conv1d(3, ch, 7, padding=3), nn.BatchNorm1d(ch), nn.ReLU(),
            nn.Conv1d(ch, ch, 5, padding=2, stride=2), nn.BatchNorm1d(ch), nn.ReLU(),
            nn.Conv1d(ch, ch, 5, padding=2, stride=2), nn.BatchNorm1d(ch), nn.ReLU(),
            nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Dropout(0.2),
        )
        self.cls_head = nn.Linear(ch, N_CLASSES)
        self.hr_head = nn.Sequential(nn.Linear(ch, 16), nn.ReLU(), nn.Linear(16, 1))
        self.log_vars = nn.Parameter(torch.zeros(2))  # learned task uncertainties

    def forward(self, x):
        z = self.trunk(x)
        return self.cls_head(z), self.hr_head(z).squeeze(-1)

    def combine(self, loss_cls, loss_hr):
        precision = torch.exp(-self.log_vars)
        return precision[0] * loss_cls + precision[1] * loss_hr + self.log_vars.sum()


def f1_score(y_true, y_pred, n_classes=N_CLASSES):
    f1s = []
    for c in range(n_classes):
        tp = np.sum((y_pred == c) & (y_true == c))
        fp = np.sum((y_pred == c) & (y_true != c))
        fn = np.sum((y_pred != c) & (y_true == c))
        denom = 2 * tp + fp + fn
        f1s.append(2 * tp / denom if denom > 0 else 0.0)
    return float(np.mean(f1s))


X, Y, HR = synth_imu(n_subjects=14, windows_per_subject=120)
n_train = 11 * 120  # subjects 0..10 train, 11..13 test
train_loader = DataLoader(IMUWindows(X[:n_train], Y[:n_train], HR[:n_train]), batch_size=32,
                          shuffle=True, drop_last=True)
test_loader = DataLoader(IMUWindows(X[n_train:], Y[n_train:], HR[n_train:]), batch_size=256)

model = MultiTaskCNN().to(DEVICE)
optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
global_step = 0

for epoch in range(5):
    model.train()
    run_loss = torch.zeros((), device=DEVICE)
    correct = torch.zeros((), device=DEVICE, dtype=torch.long)
    seen, n_since_log = 0, 0
    epoch_true, epoch_pred = [], []
    for xb, yb, hrb in train_loader:
        xb, yb, hrb = xb.to(DEVICE), yb.to(DEVICE), hrb.to(DEVICE)
        logits, hr_pred = model(xb)
        loss = model.combine(F.cross_entropy(logits, yb), F.smooth_l1_loss(hr_pred, hrb, beta=0.1))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        optimizer.step()
        global_step += 1

        pred = logits.argmax(1)
        run_loss += loss.detach()
        correct += (pred == yb).sum()
        seen += yb.numel()
        n_since_log += 1
        epoch_true.append(yb)
        epoch_pred.append(pred)
        if global_step % LOG_EVERY == 0:
            sigma = [round(s, 3) for s in torch.exp(0.5 * model.log_vars).tolist()]
            print(f"step {global_step:4d} loss {run_loss.item() / n_since_log:.4f} "
                  f"acc {correct.item() / seen:.3f} sigma {sigma}")
            run_loss.zero_()
            n_since_log = 0
    f1 = f1_score(torch.cat(epoch_true).cpu().numpy(), torch.cat(epoch_pred).cpu().numpy())
    print(f"epoch {epoch} train macro-F1 {f1:.3f}")

model.eval()
with torch.no_grad():
    ys, ps, errs = [], [], []
    for xb, yb, hrb in test_loader:
        logits, hr_pred = model(xb.to(DEVICE))
        ys.append(yb)
        ps.append(logits.argmax(1).cpu())
        errs.append((hr_pred.cpu() - hrb).abs() * 100)
    print(f"test macro-F1 {f1_score(torch.cat(ys).numpy(), torch.cat(ps).numpy()):.3f} "
          f"HR MAE {torch.cat(errs).mean().item():.1f} bpm")
