"""Implicit-feedback recommender: a two-tower model (user/item embeddings plus a small item-feature
MLP) trained with the BPR pairwise loss on synthetic interactions drawn from latent user/item
factors. Each observed (user, item) pair is contrasted with K negatives drawn from a smoothed
popularity distribution (torch.multinomial on the device, probabilities precomputed once). Batches
come from torch.randperm on the device, the cosine LR schedule is stepped per batch (T_max = total
steps), gradients are clipped, and recall@10 on held-out items is measured under eval()/no_grad.

expect: -
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(11)
torch.manual_seed(11)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

N_USERS, N_ITEMS, LATENT, ITEM_FEAT = 300, 400, 8, 12
U = rng.normal(size=(N_USERS, LATENT))
V = rng.normal(size=(N_ITEMS, LATENT))
item_bias = rng.normal(scale=1.5, size=N_ITEMS)
scores = U @ V.T + item_bias
k_per_user = 20
top = np.argsort(-scores + rng.gumbel(size=scores.shape) * 2.0, axis=1)[:, :k_per_user]
pairs = np.stack([np.repeat(np.arange(N_USERS), k_per_user), top.reshape(-1)], 1)
is_test = rng.random(len(pairs)) < 0.2
train_pairs = torch.as_tensor(pairs[~is_test], device=device)
test_pairs = torch.as_tensor(pairs[is_test], device=device)
item_feats = torch.as_tensor(np.concatenate([V, rng.normal(size=(N_ITEMS, ITEM_FEAT - LATENT))], 1),
                             dtype=torch.float32, device=device)

train_seen = torch.zeros(N_USERS, N_ITEMS, dtype=torch.bool, device=device)
train_seen[train_pairs[:, 0], train_pairs[:, 1]] = True


class TwoTower(nn.Module):
    def __init__(self, n_users, n_items, feat_dim, dim=32):
        super().__init__()
        self.user = nn.Embedding(n_users, dim)
        self.item = nn.Embedding(n_items, dim)
        self.item_mlp = nn.Sequential(nn.Linear(feat_dim, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, dim))
        nn.init.normal_(self.user.weight, std=0.05)
        nn.init.normal_(self.item.weight, std=0.05)

    def item_vec(self, items, feats):
        return self.item(items) + self.item_mlp(feats[items])

    def forward(self, users, items, feats):
        return (self.user(users) * self.item_vec(items, feats)).sum(-1)


class PopularitySampler:
    def __init__(self, item_ids, n_items, alpha=0.75):
        counts = torch.bincount(item_ids, minlength=n_items).float() + 1.0
        self.probs = counts.pow(alpha) / counts.pow(alpha).sum()

    def __call__(self, n, k):
        return torch.multinomial(self.probs, n * k, replacement=True).view(n, k)


model = TwoTower(N_USERS, N_ITEMS, ITEM_FEAT).to(device)
sampler = PopularitySampler(train_pairs[:, 1], N_ITEMS)
epochs, batch, n_neg = 6, 256, 4
steps_per_epoch = (len(train_pairs) + batch - 1) // batch
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs * steps_per_epoch)


@torch.no_grad()
def recall_at_k(k=10):
    model.eval()
    all_items = torch.arange(N_ITEMS, device=device)
    item_emb = model.item_vec(all_items, item_feats)
    s = model.user.weight @ item_emb.T
    s = s.masked_fill(train_seen, float("-inf"))
    topk = s.topk(k, dim=1).indices
    hit = (topk[test_pairs[:, 0]] == test_pairs[:, 1:2]).any(1)
    return hit.float().mean().item()


print(f"recall@10 before training {recall_at_k():.3f}")
step = 0
for epoch in range(epochs):
    model.train()
    order = torch.randperm(len(train_pairs), device=device)
    epoch_loss = torch.zeros((), device=device)
    for b in range(steps_per_epoch):
        pb = train_pairs[order[b * batch:(b + 1) * batch]]
        users, pos = pb[:, 0], pb[:, 1]
        neg = sampler(len(pb), n_neg)
        pos_s = model(users, pos, item_feats)
        neg_s = model(users[:, None].expand_as(neg), neg, item_feats)
        loss = -F.logsigmoid(pos_s[:, None] - neg_s).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        sched.step()
        epoch_loss += loss.detach()
        step += 1
    print(f"epoch {epoch}  bpr {(epoch_loss / steps_per_epoch).item():.4f}  recall@10 {recall_at_k():.3f}")
