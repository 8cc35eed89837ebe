"""Multi-label tagging of synthetic documents: 48-dim bag-of-topics features, 10 tags with very
different prevalence (some under 5%), each tag a noisy linear-threshold function of the features.
An MLP with BatchNorm and dropout is trained with BCEWithLogitsLoss(pos_weight=neg/pos) computed on
the device from the training labels, using a DataLoader over a numpy-backed Dataset, gradient
accumulation over 4 micro-batches, a linear warm-up LambdaLR stepped per optimizer step, gradient
clipping and AdamW. Validation computes micro/macro F1 under eval()/no_grad; per-tag thresholds
are tuned on validation at the end.

expect: -
"""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

SEED = 21
np.random.seed(SEED)
torch.manual_seed(SEED)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

N_FEAT, N_TAGS = 48, 10


def synth(n, W, b, rng):
    X = rng.gamma(0.6, 1.0, size=(n, N_FEAT)).astype(np.float32)
    X /= X.sum(1, keepdims=True) + 1e-6
    X = np.log1p(50 * X)
    logits = X @ W + b + 0.4 * rng.normal(size=(n, N_TAGS))
    return X.astype(np.float32), (logits > 0).astype(np.float32)


rng = np.random.default_rng(SEED)
W = rng.normal(size=(N_FEAT, N_TAGS)).astype(np.float32)
b = -np.linspace(0.5, 4.0, N_TAGS).astype(np.float32)   # later tags are rarer
Xtr, Ytr = synth(6000, W, b, rng)
Xva, Yva = synth(1500, W, b, rng)


class TagDataset(Dataset):
    def __init__(self, X, Y):
        self.X, self.Y = X, Y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i], self.Y[i]


train_loader = DataLoader(TagDataset(Xtr, Ytr), batch_size=64, shuffle=True, drop_last=True,
                          generator=torch.Generator().manual_seed(SEED))
Xva_t, Yva_t = torch.from_numpy(Xva).to(device), torch.from_numpy(Yva).to(device)


class Tagger(nn.Module):
    def __init__(self, d_in, n_out, hidden=128, p=0.2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(p),
                                  nn.Linear(hidden, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(p))
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.out(self.body(x))


def f1_scores(probs, y, thr):
    pred = (probs >= thr).float()
    tp = (pred * y).sum(0)
    fp = (pred * (1 - y)).sum(0)
    fn = ((1 - pred) * y).sum(0)
    per_tag = 2 * tp / (2 * tp + fp + fn).clamp_min(1)
    micro = 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum()).clamp_min(1)
    return micro.item(), per_tag.mean().item(), per_tag


model = Tagger(N_FEAT, N_TAGS).to(device)
y_train = torch.from_numpy(Ytr).to(device)
pos = y_train.sum(0)
pos_weight = ((len(y_train) - pos) / pos.clamp_min(1)).clamp(max=30.0)
criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)

ACCUM, EPOCHS, WARMUP = 4, 6, 10
opt_steps = EPOCHS * (len(train_loader) // ACCUM)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / WARMUP))


@torch.no_grad()
def predict(X):
    model.eval()
    return torch.sigmoid(model(X))


micro_step = 0
optimizer.zero_grad(set_to_none=True)
for epoch in range(EPOCHS):
    model.train()
    for i, (xb, yb) in enumerate(train_loader):
        xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
        loss = criterion(model(xb), yb) / ACCUM
        loss.backward()
        micro_step += 1
        if (i + 1) % ACCUM == 0:
            grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
        if micro_step % 50 == 0:
            print(f"step {micro_step:4d}  loss {loss.item() * ACCUM:.4f}  grad_norm {float(grad_norm):.3f}")
    probs = predict(Xva_t)
    micro, macro, _ = f1_scores(probs, Yva_t, 0.5)
    val_loss = criterion(torch.logit(probs.clamp(1e-6, 1 - 1e-6)), Yva_t).item()
    print(f"epoch {epoch}  val loss {val_loss:.4f}  micro-F1 {micro:.3f}  macro-F1 {macro:.3f}")

probs = predict(Xva_t)
grid = torch.linspace(0.1, 0.9, 17, device=device)
best_thr = torch.stack([f1_scores(probs, Yva_t, t)[2] for t in grid]).argmax(0)
thr = grid[best_thr]
micro, macro, _ = f1_scores(probs, Yva_t, thr)
print(f"tuned thresholds: micro-F1 {micro:.3f}  macro-F1 {macro:.3f}")
