"""Neural collaborative filtering (NeuMF-style) rating model on synthetic interactions.

Users and items get latent factors from a hidden ground-truth model; observed ratings
are a noisy, clipped function of their dot product plus user/item biases.  The model
combines a GMF branch (element-wise product of embeddings) and an MLP tower over the
concatenated embeddings, plus bias embeddings.  Training uses a DataLoader over a
numpy-backed Dataset, AdamW with separate parameter groups (no weight decay on
embeddings and biases), gradient accumulation (zero_grad every 2 micro-batches),
gradient clipping, an EMA copy of the model updated under no_grad and used for
evaluation in eval mode, and periodic .item() logging.  A forward hook on the MLP
tower records activations so their distribution can be inspected after training.
Bug: the "visualisation" hook appends every output (still attached to its autograd
graph) to a global list on every forward, so each step's activations and graph stay
alive for the whole run and memory grows step after step.

expect: memory growth
"""
import copy

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

rng = np.random.default_rng(2024)
torch.manual_seed(2024)

N_USERS, N_ITEMS, TRUE_RANK = 400, 300, 6


def synth_ratings(n_obs):
    U = rng.normal(0, 1, (N_USERS, TRUE_RANK)) / np.sqrt(TRUE_RANK)
    V = rng.normal(0, 1, (N_ITEMS, TRUE_RANK))
    bu = rng.normal(0, 0.3, N_USERS)
    bi = rng.normal(0, 0.5, N_ITEMS)
    users = rng.integers(0, N_USERS, n_obs)
    items = rng.integers(0, N_ITEMS, n_obs)
    r = 3.5 + bu[users] + bi[items] + 1.2 * np.einsum("nk,nk->n", U[users], V[items])
    r = np.clip(r + rng.normal(0, 0.25, n_obs), 1.0, 5.0)
    return users.astype(np.int64), items.astype(np.int64), r.astype(np.float32)


class RatingsDataset(Dataset):
    def __init__(self, users, items, ratings):
        self.users, self.items, self.ratings = users, items, ratings

    def __len__(self):
        return len(self.ratings)

    def __getitem__(self, i):
        return self.users[i], self.items[i], self.ratings[i]


class NeuMF(nn.Module):
    def __init__(self, n_users, n_items, gmf_dim=16, mlp_dim=32, hidden=(64, 32)):
        super().__init__()
        self.user_gmf = nn.Embedding(n_users, gmf_dim)
        self.item_gmf = nn.Embedding(n_items, gmf_dim)
        self.user_mlp = nn.Embedding(n_users, mlp_dim)
        self.item_mlp = nn.Embedding(n_items, mlp_dim)
        self.user_bias = nn.Embedding(n_users, 1)
        self.item_bias = nn.Embedding(n_items, 1)
        layers, d = [], 2 * mlp_dim
        for h in hidden:
            layers += [nn.Linear(d, h), nn.ReLU(), nn.Dropout(0.1)]
            d = h
        self.mlp = nn.Sequential(*layers)
        self.out = nn.Linear(gmf_dim + d, 1)
        self.global_bias = nn.Parameter(torch.tensor(3.5))
        for emb in (self.user_gmf, self.item_gmf, self.user_mlp, self.item_mlp):
            nn.init.normal_(emb.weight, std=0.1)
        nn.init.zeros_(self.user_bias.weight)
        nn.init.zeros_(self.item_bias.weight)

    def forward(self, u, i):
        gmf = self.user_gmf(u) * self.item_gmf(i)
        mlp = self.mlp(torch.cat([self.user_mlp(u), self.item_mlp(i)], dim=-1))
        pred = self.out(torch.cat([gmf, mlp], dim=-1)).squeeze(-1)
        return pred + self.user_bias(u).squeeze(-1) + self.item_bias(i).squeeze(-1) + self.global_bias


activation_log = {"mlp": []}


def log_activation(module, inputs, output):
    # keep MLP-tower activations for the histogram printed after training
    activation_log["mlp"].append(output)


@torch.no_grad()
def ema_update(ema, model, decay):
    for pe, pm in zip(ema.parameters(), model.parameters()):
        pe.mul_(decay).add_(pm, alpha=1 - decay)


@torch.no_grad()
def rmse(model, loader):
    model.eval()
    se, n = torch.zeros((), device=device), 0
    for u, i, r in loader:
        u, i, r = u.to(device), i.to(device), r.to(device)
        se += ((model(u, i).clamp(1, 5) - r) ** 2).sum()
        n += len(r)
    return (se / n).sqrt().item()


def main():
    users, items, ratings = synth_ratings(24000)
    split = 20000
    train_ds = RatingsDataset(users[:split], items[:split], ratings[:split])
    test_ds = RatingsDataset(users[split:], items[split:], ratings[split:])
    train_dl = DataLoader(train_ds, batch_size=128, shuffle=True, drop_last=True,
                          generator=torch.Generator().manual_seed(0))
    test_dl = DataLoader(test_ds, batch_size=1024)

    model = NeuMF(N_USERS, N_ITEMS).to(device)
    ema = copy.deepcopy(model).eval()
    for p in ema.parameters():
        p.requires_grad_(False)
    hook = model.mlp.register_forward_hook(log_activation)

    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if ("emb" in name or "bias" in name or p.ndim < 2 or "_gmf" in name or "_mlp" in name) else decay).append(p)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4},
                             {"params": no_decay, "weight_decay": 0.0}], lr=4e-3)
    loss_fn = nn.MSELoss()
    accum = 2

    step = 0
    for epoch in range(3):
        model.train()
        for k, (u, i, r) in enumerate(train_dl):
            u, i, r = u.to(device), i.to(device), r.to(device)
            loss = loss_fn(model(u, i), r) / accum
            loss.backward()
            if (k + 1) % accum == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
                opt.step()
                opt.zero_grad(set_to_none=True)
                ema_update(ema, model, decay=0.98)
                step += 1
                if step % 50 == 0:
                    print(f"epoch {epoch} step {step:4d}  mse {loss.item() * accum:.4f}")
        print(f"epoch {epoch}  test rmse (model) {rmse(model, test_dl):.4f}  (ema) {rmse(ema, test_dl):.4f}")

    hook.remove()
    acts = activation_log["mlp"][-1]
    print(f"MLP tower activations: mean {acts.mean().item():.3f}  frac zero {(acts == 0).float().mean().item():.2f}")


if __name__ == "__main__":
    main()
