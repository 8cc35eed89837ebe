"""Metric learning with a batch-hard triplet loss: pairwise distances as sqrt of squared distances
clamped at a small epsilon, so sqrt's gradient stays finite on the diagonal.

expect: -
"""

import torch
import torch.nn.functional as F
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(24)

CLASSES, PER_CLASS, DIM = 10, 8, 32
prototypes = torch.randn(CLASSES, DIM) * 2


def sample_batch():
    labels = torch.arange(CLASSES).repeat_interleave(PER_CLASS)
    return prototypes[labels] + torch.randn(len(labels), DIM), labels


class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(DIM, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, x):
        return F.normalize(self.net(x), dim=1)


def pairwise_distances(emb):
    dot = emb @ emb.t()
    sq = dot.diagonal()
    d2 = sq.unsqueeze(0) - 2.0 * dot + sq.unsqueeze(1)
    return d2.clamp(min=1e-12).sqrt()


def batch_hard_triplet_loss(emb, labels, margin=0.3):
    dist = pairwise_distances(emb)
    same = labels.unsqueeze(0) == labels.unsqueeze(1)
    hardest_pos = (dist * same.float()).max(dim=1).values
    hardest_neg = (dist + 1e6 * same.float()).min(dim=1).values
    return F.relu(hardest_pos - hardest_neg + margin).mean()


model = Embedder().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for step in range(200):
    x, labels = sample_batch()
    x, labels = x.to(device), labels.to(device)
    loss = batch_hard_triplet_loss(model(x), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 40 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
