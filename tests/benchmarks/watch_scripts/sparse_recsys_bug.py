"""Neural collaborative filtering on synthetic implicit feedback with sparse embedding tables.

Users and items have hidden taste vectors; a user "clicks" an item with probability given by a
logistic function of their affinity plus an item popularity term. The model (NCF-style) looks up
user and item embeddings from nn.Embedding(sparse=True) tables, concatenates them with their
elementwise product, and scores the pair with an MLP tower followed by a linear output layer.
Because the embedding gradients are sparse, the tables are optimized by torch.optim.SparseAdam,
while the dense tower/output parameters use a regular Adam: two optimizers, both zeroed and
stepped every iteration. Training batches are drawn from a numpy-backed Dataset through a
DataLoader; AUC on a held-out set is computed in eval mode under no_grad every epoch.
Bug: the dense Adam is built from model.out only, so the whole MLP tower is in no optimizer and
stays at its random initialization (only the embeddings and the output layer learn).

expect: not in optimizer
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

SEED = 11
np.random.seed(SEED)
torch.manual_seed(SEED)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

N_USERS, N_ITEMS, LATENT = 200, 150, 4


def simulate_interactions(n, rng):
    user_taste = rng.normal(size=(N_USERS, LATENT))
    item_attr = rng.normal(size=(N_ITEMS, LATENT))
    popularity = rng.normal(scale=0.7, size=N_ITEMS)
    u = rng.integers(0, N_USERS, size=n)
    i = rng.integers(0, N_ITEMS, size=n)
    logit = 2.5 * np.sum(user_taste[u] * item_attr[i], axis=1) / np.sqrt(LATENT) + popularity[i] - 0.3
    clicked = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    return u.astype(np.int64), i.astype(np.int64), clicked


class ClickLog(Dataset):
    def __init__(self, users, items, labels):
        self.users, self.items, self.labels = users, items, labels

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, k):
        return self.users[k], self.items[k], self.labels[k]


class NCF(nn.Module):
    def __init__(self, n_users, n_items, dim=16, hidden=(64, 32)):
        super().__init__()
        self.user_emb = nn.Embedding(n_users, dim, sparse=True)
        self.item_emb = nn.Embedding(n_items, dim, sparse=True)
        nn.init.normal_(self.user_emb.weight, std=0.1)
        nn.init.normal_(self.item_emb.weight, std=0.1)
        layers, d = [], 3 * dim
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU(), nn.Dropout(0.1)]
            d = h
        self.tower = nn.Sequential(*layers)
        self.out = nn.Linear(d, 1)

    def forward(self, u, i):
        eu, ei = self.user_emb(u), self.item_emb(i)
        z = torch.cat([eu, ei, eu * ei], dim=-1)
        return self.out(self.tower(z)).squeeze(-1)


def auc(scores, labels):
    order = np.argsort(scores)
    ranks = np.empty_like(order, dtype=np.float64)
    ranks[order] = np.arange(1, len(scores) + 1)
    pos = labels == 1
    n_pos, n_neg = pos.sum(), (~pos).sum()
    return (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


rng = np.random.default_rng(SEED)
u_all, i_all, y_all = simulate_interactions(20000, rng)
split = 16000
train_loader = DataLoader(ClickLog(u_all[:split], i_all[:split], y_all[:split]), batch_size=256, shuffle=True)
val_u = torch.from_numpy(u_all[split:]).to(device)
val_i = torch.from_numpy(i_all[split:]).to(device)
val_y = y_all[split:]

model = NCF(N_USERS, N_ITEMS).to(device)
sparse_params = list(model.user_emb.parameters()) + list(model.item_emb.parameters())
dense_params = list(model.out.parameters())
sparse_opt = torch.optim.SparseAdam(sparse_params, lr=1e-2)
dense_opt = torch.optim.Adam(dense_params, lr=2e-3, weight_decay=1e-5)

for epoch in range(3):
    model.train()
    total, batches = 0.0, 0
    for u, i, y in train_loader:
        u, i, y = u.to(device), i.to(device), y.to(device)
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss = F.binary_cross_entropy_with_logits(model(u, i), y)
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        total += loss.item() if batches % 20 == 0 else 0.0
        batches += 1

    model.eval()
    with torch.no_grad():
        val_scores = model(val_u, val_i).cpu().numpy()
    val_loss = F.binary_cross_entropy_with_logits(torch.from_numpy(val_scores), torch.from_numpy(val_y)).item()
    print(f"epoch {epoch}  sampled train loss {total / ((batches + 19) // 20):.4f}  "
          f"val logloss {val_loss:.4f}  val AUC {auc(val_scores, val_y):.4f}")

print("tower first-layer weight norm:", model.tower[0].weight.norm().item())
