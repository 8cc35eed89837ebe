"""Tabular ResNet (Gorishniy et al. style) for a synthetic credit-default classification task.

Numeric features with very different scales plus two categorical columns (embedded) are fed to a
ResNet of pre-norm residual blocks (BatchNorm -> Linear -> ReLU -> Dropout -> Linear). Kaggle-style
script: a CFG dict, a numpy-backed Dataset, AdamW with no weight decay on norms/biases, OneCycleLR
stepped per batch, a quick sanity-check prediction before training, and per-epoch validation AUC.
Bug: the sanity check switches the model to eval mode and the training loop never calls
model.train(), so every epoch trains with dropout off and BatchNorm using (never updated) running
statistics instead of batch statistics.

expect: eval mode
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

CFG = dict(seed=42, n_rows=6000, n_num=12, cat_card=(7, 12), d=64, blocks=3, dropout=0.2,
           lr=3e-3, wd=1e-4, bs=128, epochs=5)

torch.manual_seed(CFG["seed"])
rng = np.random.default_rng(CFG["seed"])
device = torch.device("cuda" if torch.cuda.is_available()
                      else "mps" if torch.backends.mps.is_available() else "cpu")


def make_data(n):
    scales = np.logspace(-1, 3, CFG["n_num"]).astype(np.float32)
    offsets = rng.normal(0, 50, CFG["n_num"]).astype(np.float32)
    num = rng.normal(size=(n, CFG["n_num"])).astype(np.float32) * scales + offsets
    cat = np.stack([rng.integers(0, c, n) for c in CFG["cat_card"]], 1)
    z = (num - offsets) / scales
    logit = 1.5 * z[:, 0] - z[:, 3] * z[:, 5] + 0.8 * np.sin(2 * z[:, 7]) + 0.6 * (cat[:, 0] % 3 == 0)
    y = (logit + 0.3 * rng.normal(size=n) > 0.2).astype(np.float32)
    return num, cat, y


class CreditDataset(Dataset):
    def __init__(self, num, cat, y):
        self.num, self.cat, self.y = num, cat, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.num[i], self.cat[i], self.y[i]


class ResBlock(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.norm = nn.BatchNorm1d(d)
        self.fc1, self.fc2 = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        h = self.fc2(self.drop(F.relu(self.fc1(self.norm(x)))))
        return x + self.drop(h)


class TabResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.cat_emb = nn.ModuleList([nn.Embedding(c, 8) for c in CFG["cat_card"]])
        self.input_norm = nn.BatchNorm1d(CFG["n_num"])
        self.stem = nn.Linear(CFG["n_num"] + 8 * len(CFG["cat_card"]), CFG["d"])
        self.blocks = nn.Sequential(*[ResBlock(CFG["d"], CFG["dropout"]) for _ in range(CFG["blocks"])])
        self.out_norm = nn.BatchNorm1d(CFG["d"])
        self.out = nn.Linear(CFG["d"], 1)

    def forward(self, num, cat):
        x = torch.cat([self.input_norm(num)] + [e(cat[:, i]) for i, e in enumerate(self.cat_emb)], 1)
        x = self.blocks(self.stem(x))
        return self.out(F.relu(self.out_norm(x))).squeeze(-1)


def roc_auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty(len(scores)); ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@torch.no_grad()
def predict(model, loader):
    model.eval()
    out = []
    for num, cat, _ in loader:
        out.append(torch.sigmoid(model(num.to(device), cat.to(device))))
    return torch.cat(out).cpu().numpy()


num, cat, y = make_data(CFG["n_rows"])
n_tr = int(0.8 * len(y))
train_dl = DataLoader(CreditDataset(num[:n_tr], cat[:n_tr], y[:n_tr]), batch_size=CFG["bs"],
                      shuffle=True, drop_last=True)
valid_dl = DataLoader(CreditDataset(num[n_tr:], cat[n_tr:], y[n_tr:]), batch_size=512)

model = TabResNet().to(device)

# sanity check: forward a batch through the untrained net, outputs should be ~0.5
model.eval()
with torch.no_grad():
    b_num, b_cat, _ = next(iter(valid_dl))
    p0 = torch.sigmoid(model(b_num[:8].to(device), b_cat[:8].to(device)))
    print("sanity preds:", np.round(p0.cpu().numpy(), 3))

decay, no_decay = [], []
for name, p in model.named_parameters():
    (no_decay if p.ndim < 2 or "norm" in name else decay).append(p)
opt = torch.optim.AdamW([{"params": decay, "weight_decay": CFG["wd"]},
                         {"params": no_decay, "weight_decay": 0.0}], lr=CFG["lr"])
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=CFG["lr"], epochs=CFG["epochs"],
                                            steps_per_epoch=len(train_dl))

for epoch in range(CFG["epochs"]):
    tr_loss = torch.zeros((), device=device)
    for num_b, cat_b, y_b in train_dl:
        num_b, cat_b, y_b = num_b.to(device), cat_b.to(device), y_b.to(device)
        logits = model(num_b, cat_b)
        loss = F.binary_cross_entropy_with_logits(logits, y_b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        tr_loss += loss.detach()
    scores = predict(model, valid_dl)
    auc = roc_auc(scores, y[n_tr:])
    acc = ((scores > 0.5) == y[n_tr:]).mean()
    print(f"epoch {epoch}: train_loss={tr_loss.item() / len(train_dl):.4f} "
          f"valid_auc={auc:.4f} valid_acc={acc:.4f} lr={sched.get_last_lr()[0]:.2e}")
