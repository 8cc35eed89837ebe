"""Kaggle-style tabular classifier trained with gradient accumulation.

A synthetic "customer churn" table (numeric features plus two categorical
columns) is wrapped in a numpy-backed Dataset and fed through a DataLoader with
small micro-batches. An MLP with categorical embeddings, dropout and LayerNorm
is trained with AdamW; gradients of 4 micro-batches are accumulated before each
optimizer step (effective batch = 4 x 32), with gradient clipping and a running
loss printed every few optimizer steps. Validation runs under torch.no_grad at
the end of every epoch. Bug: optimizer.zero_grad() is never called, so the
.grad buffers keep summing every micro-batch since the start of training and
each optimizer step uses the whole history instead of the last 4 micro-batches.

expect: missing zero_grad, growing grads
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader

SEED = 1234
torch.manual_seed(SEED)
np.random.seed(SEED)

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

N_NUM = 12
CARD_PLAN, CARD_REGION = 5, 9


def make_table(n, rng):
    num = rng.normal(size=(n, N_NUM)).astype(np.float32)
    plan = rng.integers(0, CARD_PLAN, size=n)
    region = rng.integers(0, CARD_REGION, size=n)
    w = np.linspace(-1.0, 1.0, N_NUM).astype(np.float32)
    plan_eff = np.array([-1.0, -0.3, 0.0, 0.4, 1.2], dtype=np.float32)
    score = num @ w + 0.8 * np.sin(2 * num[:, 0]) + plan_eff[plan] + 0.3 * (region % 3 == 0)
    y = (score + 0.3 * rng.normal(size=n) > 0).astype(np.int64)
    return num, plan, region, y


class ChurnTable(Dataset):
    def __init__(self, num, plan, region, y):
        self.num, self.plan, self.region, self.y = num, plan, region, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return (torch.from_numpy(self.num[i]), int(self.plan[i]), int(self.region[i]), int(self.y[i]))


class TabularNet(nn.Module):
    def __init__(self, n_num, hidden=64, p_drop=0.1):
        super().__init__()
        self.plan_emb = nn.Embedding(CARD_PLAN, 4)
        self.region_emb = nn.Embedding(CARD_REGION, 4)
        self.body = nn.Sequential(
            nn.Linear(n_num + 8, hidden), nn.LayerNorm(hidden), nn.GELU(), nn.Dropout(p_drop),
            nn.Linear(hidden, hidden), nn.GELU(), nn.Dropout(p_drop),
        )
        self.out = nn.Linear(hidden, 2)

    def forward(self, num, plan, region):
        x = torch.cat([num, self.plan_emb(plan), self.region_emb(region)], dim=1)
        return self.out(self.body(x))


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct, total, loss_sum = 0, 0, 0.0
    for num, plan, region, y in loader:
        num, plan, region, y = num.to(device), plan.to(device), region.to(device), y.to(device)
        logits = model(num, plan, region)
        loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
        correct += (logits.argmax(1) == y).sum().item()
        total += y.numel()
    model.train()
    return loss_sum / total, correct / total


def main():
    rng = np.random.default_rng(SEED)
    train_ds = ChurnTable(*make_table(4096, rng))
    val_ds = ChurnTable(*make_table(1024, rng))
    g = torch.Generator().manual_seed(SEED)
    train_dl = DataLoader(train_ds, batch_size=32, shuffle=True, generator=g, drop_last=True)
    val_dl = DataLoader(val_ds, batch_size=256)

    model = TabularNet(N_NUM).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    accum_steps = 4
    epochs = 3
    log_every = 8

    model.train()
    opt_step = 0
    running = 0.0
    for epoch in range(epochs):
        for i, (num, plan, region, y) in enumerate(train_dl):
            num, plan, region, y = num.to(device), plan.to(device), region.to(device), y.to(device)
            logits = model(num, plan, region)
            loss = F.cross_entropy(logits, y) / accum_steps
            loss.backward()
            running += loss.item()

            if (i + 1) % accum_steps == 0:
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
                optimizer.step()
                opt_step += 1
                if opt_step % log_every == 0:
                    print(f"epoch {epoch} step {opt_step:4d} loss {running / log_every:.4f} "
                          f"grad_norm {grad_norm.item():.3f}")
                    running = 0.0
        val_loss, val_acc = evaluate(model, val_dl)
        print(f"epoch {epoch}: val_loss {val_loss:.4f} val_acc {val_acc:.3f}")


if __name__ == "__main__":
    main()
