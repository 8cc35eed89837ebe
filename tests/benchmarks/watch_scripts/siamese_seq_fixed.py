"""Siamese Transformer encoder for verifying whether two pen trajectories come from the same writer.

Each synthetic "signature" is a 2-D pen trajectory of 24 points drawn from one of 12 writer
prototypes (sums of random sinusoids) with random time-warp, scale jitter and noise. A shared
Transformer encoder (linear input projection + sinusoidal positional encoding, 2 pre-norm layers,
masked mean pooling over variable-length sequences) embeds both trajectories of a pair; training
uses a contrastive loss on the cosine distance with positive/negative pairs sampled on the device.
Validation reports verification accuracy at a fixed distance threshold.

expect: -
"""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)
np.random.seed(11)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

N_WRITERS, SEQ_LEN, MAX_LEN, D_MODEL = 12, 24, 32, 24


def sinusoid_table(n_pos, d):
    pos = np.arange(n_pos)[:, None].astype(np.float64)
    i = np.arange(d)[None, :]
    angle = pos / np.power(10000.0, (2 * (i // 2)) / d)
    table = np.zeros((n_pos, d), dtype=np.float32)
    table[:, 0::2] = np.sin(angle[:, 0::2])
    table[:, 1::2] = np.cos(angle[:, 1::2])
    return table


def make_signatures(n_per_writer):
    t = np.linspace(0, 1, SEQ_LEN)
    freqs = np.random.uniform(1, 4, (N_WRITERS, 2, 3))
    phases = np.random.uniform(0, 2 * np.pi, (N_WRITERS, 2, 3))
    xs, ys, lens = [], [], []
    for w in range(N_WRITERS):
        for _ in range(n_per_writer):
            warp = np.clip(t + 0.05 * np.sin(2 * np.pi * np.random.rand() + 3 * t), 0, 1)
            traj = np.stack([np.sin(2 * np.pi * freqs[w, c, :, None] * warp + phases[w, c, :, None]).sum(0)
                             for c in range(2)], -1)
            traj = traj * np.random.uniform(0.8, 1.2) + 0.15 * np.random.randn(SEQ_LEN, 2)
            xs.append(traj.astype(np.float32))
            ys.append(w)
            lens.append(np.random.randint(18, SEQ_LEN + 1))
    return (torch.from_numpy(np.stack(xs)), torch.tensor(ys), torch.tensor(lens))


class TrajectoryEncoder(nn.Module):
    def __init__(self, d_model=D_MODEL, n_layers=2, n_heads=2):
        super().__init__()
        self.d_model = d_model
        self.inp = nn.Linear(2, d_model)
        self.register_buffer("pos_table", torch.from_numpy(sinusoid_table(MAX_LEN, d_model)),
                             persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, n_heads, 2 * d_model, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.layers = nn.TransformerEncoder(layer, n_layers, enable_nested_tensor=False)
        self.proj = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, d_model))

    def forward(self, x, lengths):
        T = x.size(1)
        h = self.inp(x) * math.sqrt(self.d_model) + self.pos_table[:T]
        pad = torch.arange(T, device=x.device)[None, :] >= lengths[:, None]
        h = self.layers(h, src_key_padding_mask=pad)
        keep = (~pad).unsqueeze(-1).float()
        pooled = (h * keep).sum(1) / keep.sum(1)
        return F.normalize(self.proj(pooled), dim=-1)


class Siamese(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = TrajectoryEncoder()

    def forward(self, xa, la, xb, lb):
        return 1 - (self.encoder(xa, la) * self.encoder(xb, lb)).sum(-1)  # cosine distance


def sample_pairs(y, batch, gen):
    a = torch.randint(0, len(y), (batch,), device=y.device, generator=gen)
    same = torch.rand(batch, device=y.device, generator=gen) < 0.5
    b = torch.randint(0, len(y), (batch,), device=y.device, generator=gen)
    # for positives, pick a random sample of the same writer
    by_writer = torch.argsort(y)
    per = len(y) // N_WRITERS
    pos = by_writer[y[a] * per + torch.randint(0, per, (batch,), device=y.device, generator=gen)]
    b = torch.where(same, pos, b)
    return a, b, (y[a] == y[b]).float()


def contrastive(dist, target, margin=0.5):
    return (target * dist.pow(2) + (1 - target) * F.relu(margin - dist).pow(2)).mean()


x_tr, y_tr, l_tr = [t.to(device) for t in make_signatures(40)]
x_va, y_va, l_va = [t.to(device) for t in make_signatures(10)]

model = Siamese().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
gen = torch.Generator(device=device).manual_seed(5)

for epoch in range(5):
    model.train()
    epoch_loss = torch.zeros((), device=device)
    for step in range(30):
        a, b, target = sample_pairs(y_tr, 32, gen)
        dist = model(x_tr[a], l_tr[a], x_tr[b], l_tr[b])
        loss = contrastive(dist, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss += loss.detach()
    scheduler.step()

    model.eval()
    with torch.no_grad():
        a, b, target = sample_pairs(y_va, 512, gen)
        dist = model(x_va[a], l_va[a], x_va[b], l_va[b])
        acc = ((dist < 0.25).float() == target).float().mean()
    print(f"epoch {epoch} loss {epoch_loss.item() / 30:.4f} val verification acc {acc.item():.3f}")
