"""RealNVP-style normalizing flow fitted to a 2-D two-moons density by maximum likelihood. The flow
stacks ActNorm layers (data-dependent initialisation on the first batch) and affine coupling layers
with alternating binary masks; the base distribution is a standard normal. Optimisation uses AdamW
with two parameter groups (weights with decay, 1-D scales/biases/ActNorm without), gradient clipping,
a per-epoch StepLR, validation NLL under no_grad, early stopping and an in-memory best checkpoint.

expect: -
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn

SEED = 7
torch.manual_seed(SEED)
np.random.seed(SEED)
device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")


def make_moons(n, noise=0.08, rng=np.random):
    a = rng.rand(n) * np.pi
    upper = rng.rand(n) < 0.5
    x = np.where(upper, np.cos(a), 1 - np.cos(a))
    y = np.where(upper, np.sin(a), 0.5 - np.sin(a))
    pts = np.stack([x, y], 1) + noise * rng.randn(n, 2)
    return (pts * 2.0 + np.array([3.0, -1.5])).astype(np.float32)  # deliberately off-centre


class ActNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))
        self.register_buffer("initialized", torch.tensor(False))

    @torch.no_grad()
    def _init(self, x):
        self.loc.copy_(-x.mean(0))
        self.log_scale.copy_(-torch.log(x.std(0) + 1e-6))
        self.initialized.fill_(True)

    def forward(self, x):
        if not self.initialized:
            self._init(x)
        z = (x + self.loc) * torch.exp(self.log_scale)
        return z, self.log_scale.sum().expand(x.shape[0])


class AffineCoupling(nn.Module):
    def __init__(self, mask, hidden=64):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Linear(2, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 4))
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x):
        xm = x * self.mask
        s, t = self.net(xm).chunk(2, dim=1)
        s = torch.tanh(s) * (1 - self.mask)
        t = t * (1 - self.mask)
        z = xm + (1 - self.mask) * (x * torch.exp(s) + t)
        return z, s.sum(1)


class Flow(nn.Module):
    def __init__(self, n_blocks=4):
        super().__init__()
        self.actnorms = nn.ModuleList()
        self.couplings = nn.ModuleList()
        for i in range(n_blocks):
            mask = torch.tensor([1.0, 0.0]) if i % 2 == 0 else torch.tensor([0.0, 1.0])
            self.actnorms.append(ActNorm(2))
            self.couplings.append(AffineCoupling(mask))

    def log_prob(self, x):
        logdet = torch.zeros(x.shape[0], device=x.device)
        z = x
        for an, cp in zip(self.actnorms, self.couplings):
            z, ld = an(z)
            logdet = logdet + ld
            z, ld = cp(z)
            logdet = logdet + ld
        base = -0.5 * (z ** 2).sum(1) - math.log(2 * math.pi)
        return base + logdet


train_x = torch.from_numpy(make_moons(4000)).to(device)
val_x = torch.from_numpy(make_moons(1000)).to(device)

flow = Flow().to(device)
with torch.no_grad():
    flow.log_prob(train_x[:512])  # ActNorm data-dependent init

decay, no_decay = [], []
for name, p in flow.named_parameters():
    if not p.requires_grad:
        continue
    (decay if p.ndim >= 2 else no_decay).append(p)
optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 1e-4},
                               {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)

batch_size, epochs, patience = 200, 12, 3
best_val, best_state, bad_epochs = float("inf"), None, 0
for epoch in range(epochs):
    flow.train()
    perm = torch.randperm(train_x.shape[0], device=device)
    for i in range(0, train_x.shape[0], batch_size):
        xb = train_x[perm[i:i + batch_size]]
        nll = -flow.log_prob(xb).mean()
        optimizer.zero_grad()
        nll.backward()
        torch.nn.utils.clip_grad_norm_(flow.parameters(), max_norm=5.0)
        optimizer.step()
    scheduler.step()

    flow.eval()
    with torch.no_grad():
        val_nll = -flow.log_prob(val_x).mean().item()
    print(f"epoch {epoch:2d}  train nll {nll.item():.3f}  val nll {val_nll:.3f}")
    if val_nll < best_val - 1e-3:
        best_val, bad_epochs = val_nll, 0
        best_state = {"epoch": epoch, "model": copy.deepcopy(flow.state_dict()),
                      "optim": copy.deepcopy(optimizer.state_dict())}
    else:
        bad_epochs += 1
        if bad_epochs >= patience:
            print("early stopping")
            break

flow.load_state_dict(best_state["model"])
print(f"best val nll {best_val:.3f} at epoch {best_state['epoch']}")
