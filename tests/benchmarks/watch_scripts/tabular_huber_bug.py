"""Kaggle-style tabular regression: predict a (synthetic) house sale price from a mix of
numeric and categorical features. Numeric columns are standardised with training-set
statistics, categoricals go through small embeddings, and an MLP with a residual block
regresses the log-price. Because some listings are known to be unreliable, each row
carries a sample weight and the model is trained with a custom weighted, smoothed
L1 / Huber-style loss. A numpy-backed Dataset feeds a DataLoader; AdamW with a
linear warm-up + cosine LambdaLR stepped per batch, gradient clipping, and an exponential
moving average (EMA) of the weights that is used for validation.
Bug: the loss subtracts the (B,) target from the (B, 1) prediction without squeezing,
so the difference broadcasts to (B, B) (every prediction against every target); the
model is pulled towards the batch mean and validation RMSE stays near the target std.

expect: broadcast
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(42)
np.random.seed(42)
DEVICE = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")

# ---------------------------------------------------------------- synthetic table
N_ROWS, N_NUM = 4000, 8
CAT_CARDS = [6, 12]          # neighbourhood, building type


def make_table(n, rng):
    num = rng.normal(size=(n, N_NUM)).astype(np.float32)
    num[:, 0] = rng.lognormal(4.5, 0.4, size=n)            # living area
    num[:, 1] = rng.integers(1950, 2022, size=n)            # year built
    cats = np.stack([rng.integers(0, c, size=n) for c in CAT_CARDS], 1).astype(np.int64)
    hood_effect = np.linspace(-0.4, 0.5, CAT_CARDS[0])[cats[:, 0]]
    type_effect = rng.normal(0, 0.15, size=CAT_CARDS[1])[cats[:, 1]]
    log_price = (11.0 + 0.9 * np.log(num[:, 0] / 90.0) + 0.004 * (num[:, 1] - 1990)
                 + 0.25 * np.tanh(num[:, 2]) - 0.15 * num[:, 3] * num[:, 4]
                 + hood_effect + type_effect)
    reliable = rng.random(n) > 0.1
    noise = np.where(reliable, rng.normal(0, 0.08, n), rng.normal(0, 0.8, n))
    weight = np.where(reliable, 1.0, 0.2).astype(np.float32)
    return num, cats, (log_price + noise).astype(np.float32), weight


rng = np.random.default_rng(42)
num, cats, target, weight = make_table(N_ROWS, rng)
idx = rng.permutation(N_ROWS)
tr, va = idx[:3200], idx[3200:]
mu, sd = num[tr].mean(0), num[tr].std(0) + 1e-6
num = (num - mu) / sd
y_mu, y_sd = target[tr].mean(), target[tr].std()
target_z = (target - y_mu) / y_sd


class TableDataset(Dataset):
    def __init__(self, rows):
        self.num, self.cat = num[rows], cats[rows]
        self.y, self.w = target_z[rows], weight[rows]

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.num[i], self.cat[i], self.y[i], self.w[i]


train_loader = DataLoader(TableDataset(tr), batch_size=128, shuffle=True, drop_last=True)
val_loader = DataLoader(TableDataset(va), batch_size=256, shuffle=False)


# ---------------------------------------------------------------- model
class ResidualBlock(nn.Module):
    def __init__(self, d, p=0.1):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Dropout(p), nn.Linear(d, d))

    def forward(self, x):
        return x + self.net(x)


class PriceRegressor(nn.Module):
    def __init__(self, n_num, cat_cards, emb_dim=4, hidden=96):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(c, emb_dim) for c in cat_cards])
        self.inp = nn.Linear(n_num + emb_dim * len(cat_cards), hidden)
        self.block = ResidualBlock(hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x_num, x_cat):
        e = [emb(x_cat[:, j]) for j, emb in enumerate(self.embs)]
        h = torch.relu(self.inp(torch.cat([x_num, *e], dim=1)))
        return self.out(self.block(h))          # (B, 1)


def weighted_smooth_l1(pred, target, w, beta=0.5):
    """Huber-like loss, quadratic below beta and linear above, weighted per row."""
    diff = (pred - target).abs()
    per_row = torch.where(diff < beta, 0.5 * diff ** 2 / beta, diff - 0.5 * beta)
    return (w * per_row).sum() / w.sum()


model = PriceRegressor(N_NUM, CAT_CARDS).to(DEVICE)
ema = copy.deepcopy(model).eval()
for p in ema.parameters():
    p.requires_grad_(False)
EMA_DECAY = 0.98

EPOCHS = 8
total_steps = EPOCHS * len(train_loader)
warmup = 30
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)


def lr_lambda(step):
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


@torch.no_grad()
def update_ema(src, dst, decay):
    for p_ema, p in zip(dst.parameters(), src.parameters()):
        p_ema.mul_(decay).add_(p.detach(), alpha=1 - decay)
    for b_ema, b in zip(dst.buffers(), src.buffers()):
        b_ema.copy_(b)


@torch.no_grad()
def validate(net):
    net.eval()
    se, ae, n = 0.0, 0.0, 0
    for x_num, x_cat, y, _ in val_loader:
        x_num, x_cat, y = x_num.to(DEVICE), x_cat.to(DEVICE), y.to(DEVICE)
        pred = net(x_num, x_cat).squeeze(-1) * y_sd + y_mu
        truth = y * y_sd + y_mu
        se += ((pred - truth) ** 2).sum().item()
        ae += (pred - truth).abs().sum().item()
        n += y.numel()
    rmse = math.sqrt(se / n)
    return rmse, ae / n


step = 0
for epoch in range(EPOCHS):
    model.train()
    for x_num, x_cat, y, w in train_loader:
        x_num, x_cat = x_num.to(DEVICE), x_cat.to(DEVICE)
        y, w = y.to(DEVICE), w.to(DEVICE)
        pred = model(x_num, x_cat)
        loss = weighted_smooth_l1(pred, y, w)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        update_ema(model, ema, EMA_DECAY)
        step += 1
        if step % 50 == 0:
            print(f"step {step:4d}  loss {loss.item():.4f}  lr {scheduler.get_last_lr()[0]:.2e}")
    rmse, mae = validate(model)
    rmse_ema, _ = validate(ema)
    print(f"epoch {epoch + 1}  val RMSE(log-price) {rmse:.4f}  MAE {mae:.4f}  EMA RMSE {rmse_ema:.4f}")

print(f"target std (log-price) on val: {target[va].std():.4f}")
