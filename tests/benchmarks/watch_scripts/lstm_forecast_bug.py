"""Multi-horizon load forecasting with an LSTM encoder and an MLP decoder head.

A synthetic "electricity load" series (daily + weekly seasonality, trend and noise) is cut into
sliding windows of 48 past steps to predict the next 12. The model is a 2-layer LSTM with dropout
between layers and a dropout MLP head that emits all 12 horizons at once. Training uses Adam with
gradient clipping, ReduceLROnPlateau stepped on the validation loss once per epoch, early stopping
with an in-memory best checkpoint, and a validation function that reports MAE/RMSE per horizon.
Bug: the validation function never calls model.eval() and does not run under torch.no_grad(), so
validation (and the early-stopping / plateau decisions based on it) runs with LSTM and head
dropout active and builds autograd graphs.

expect: train mode in eval, grad in eval
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(7)
np.random.seed(7)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

LOOKBACK, HORIZON = 48, 12


def make_series(n=3000):
    t = np.arange(n, dtype=np.float32)
    daily = np.sin(2 * np.pi * t / 24.0)
    weekly = 0.5 * np.sin(2 * np.pi * t / (24.0 * 7))
    trend = 0.0004 * t
    noise = 0.15 * np.random.randn(n).astype(np.float32)
    return (10 + 2 * daily + weekly + trend + noise).astype(np.float32)


class WindowDataset(Dataset):
    def __init__(self, series, mean, std):
        self.x = (series - mean) / std

    def __len__(self):
        return len(self.x) - LOOKBACK - HORIZON

    def __getitem__(self, i):
        past = self.x[i:i + LOOKBACK]
        fut = self.x[i + LOOKBACK:i + LOOKBACK + HORIZON]
        return torch.from_numpy(past).unsqueeze(-1), torch.from_numpy(fut)


class LSTMForecaster(nn.Module):
    def __init__(self, hidden=32, layers=2, dropout=0.3):
        super().__init__()
        self.encoder = nn.LSTM(1, hidden, num_layers=layers, batch_first=True, dropout=dropout)
        self.head = nn.Sequential(
            nn.Linear(hidden, 64), nn.GELU(), nn.Dropout(dropout), nn.Linear(64, HORIZON)
        )

    def forward(self, x):
        out, (h, c) = self.encoder(x)
        return self.head(out[:, -1])


def validate(model, loader, criterion):
    total, n = 0.0, 0
    abs_err = torch.zeros(HORIZON, device=device)
    sq_err = torch.zeros(HORIZON, device=device)
    for past, fut in loader:
        past, fut = past.to(device), fut.to(device)
        pred = model(past)
        total += criterion(pred, fut).item() * past.size(0)
        abs_err += (pred - fut).abs().sum(0)
        sq_err += ((pred - fut) ** 2).sum(0)
        n += past.size(0)
    return total / n, (abs_err / n).tolist(), (sq_err / n).sqrt().tolist()


series = make_series()
split = int(0.8 * len(series))
mean, std = series[:split].mean(), series[:split].std()
train_ds = WindowDataset(series[:split], mean, std)
val_ds = WindowDataset(series[split - LOOKBACK:], mean, std)
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
val_loader = DataLoader(val_ds, batch_size=128)

model = LSTMForecaster().to(device)
criterion = nn.MSELoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)

best_val, best_state, bad_epochs, patience = math.inf, None, 0, 3
for epoch in range(6):
    model.train()
    running = 0.0
    for step, (past, fut) in enumerate(train_loader):
        past, fut = past.to(device), fut.to(device)
        optimizer.zero_grad()
        loss = criterion(model(past), fut)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        running += loss.detach()
        if step >= 15:
            break
    val_loss, mae, rmse = validate(model, val_loader, criterion)
    scheduler.step(val_loss)
    print(f"epoch {epoch} train {running.item() / (step + 1):.4f} val {val_loss:.4f} "
          f"mae@1 {mae[0]:.3f} mae@12 {mae[-1]:.3f} lr {optimizer.param_groups[0]['lr']:.1e}")
    if val_loss < best_val - 1e-4:
        best_val, bad_epochs = val_loss, 0
        best_state = {"epoch": epoch, "model": copy.deepcopy(model.state_dict()),
                      "optimizer": copy.deepcopy(optimizer.state_dict())}
    else:
        bad_epochs += 1
        if bad_epochs >= patience:
            print("early stopping")
            break

model.load_state_dict(best_state["model"])
final_loss, mae, rmse = validate(model, val_loader, criterion)
print(f"best epoch {best_state['epoch']} val mse {final_loss:.4f} rmse(avg) {sum(rmse) / len(rmse):.3f}")
