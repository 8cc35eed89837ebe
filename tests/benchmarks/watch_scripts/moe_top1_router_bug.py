"""Switch-style mixture-of-experts regression with top-1 routing and a load-balancing loss.

Synthetic task: every input vector is drawn from one of several latent regimes, and each regime maps
inputs to targets with its own nonlinear function, so a sparse mixture of experts is a natural fit.
The model embeds the input, routes every token to exactly one of 8 small expert MLPs (top-1 over a
softmax router, output scaled by the gate probability), and predicts the target with a linear head.
With small batches some experts receive no tokens on a given step; the experts are evaluated
densely and the routed output gathered, so an idle expert simply gets an all-zero gradient for
that step. An auxiliary Switch-Transformer load-balancing loss (num_experts * sum_i f_i * P_i)
keeps the routing spread out. Per-expert token counts and the router gradient norm are logged
every 50 steps; evaluation runs under no_grad.
Bug: optimizer.zero_grad(set_to_none=True) was moved to just after backward/logging, right before
optimizer.step(), so every step runs with all gradients None and nothing is ever updated.

expect: zero grad at step
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(2024)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

D_IN, D_OUT, N_REGIMES = 16, 4, 6


class RegimeData:
    def __init__(self, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.centers = 3.0 * torch.randn(N_REGIMES, D_IN, generator=g)
        self.W = torch.randn(N_REGIMES, D_IN, D_OUT, generator=g) / D_IN ** 0.5
        self.b = torch.randn(N_REGIMES, D_OUT, generator=g)
        self.g = torch.Generator().manual_seed(seed + 1)

    def sample(self, n):
        k = torch.randint(0, N_REGIMES, (n,), generator=self.g)
        x = self.centers[k] + torch.randn(n, D_IN, generator=self.g)
        y = torch.tanh(torch.einsum("nd,ndo->no", x, self.W[k])) * 2.0 + self.b[k]
        return x, y


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class Top1MoE(nn.Module):
    def __init__(self, d, n_experts=8, hidden=32):
        super().__init__()
        self.n_experts = n_experts
        self.router = nn.Linear(d, n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(d, hidden) for _ in range(n_experts))

    def forward(self, x):
        probs = F.softmax(self.router(x), dim=-1)              # (N, E)
        gate, idx = probs.max(dim=-1)                          # top-1
        # small model: run every expert densely and gather the routed output per token
        # (no data-dependent shapes, no host syncs); experts that got no token this step
        # receive an all-zero gradient
        all_out = torch.stack([expert(x) for expert in self.experts], dim=1)   # (N, E, d)
        routed = all_out.gather(1, idx.view(-1, 1, 1).expand(-1, 1, x.size(-1))).squeeze(1)
        out = routed * gate.unsqueeze(-1)
        # Switch load-balancing loss
        frac_tokens = F.one_hot(idx, self.n_experts).float().mean(0)
        mean_prob = probs.mean(0)
        aux = self.n_experts * torch.sum(frac_tokens * mean_prob)
        counts = torch.bincount(idx, minlength=self.n_experts)
        return x + out, aux, counts


class MoERegressor(nn.Module):
    def __init__(self, d_model=32):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(D_IN, d_model), nn.LayerNorm(d_model))
        self.moe = Top1MoE(d_model)
        self.head = nn.Linear(d_model, D_OUT)

    def forward(self, x):
        h, aux, counts = self.moe(self.embed(x))
        return self.head(h), aux, counts


data = RegimeData(seed=3)
x_val, y_val = data.sample(1024)
x_val, y_val = x_val.to(device), y_val.to(device)

model = MoERegressor().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
AUX_WEIGHT = 0.05
STEPS, BATCH = 300, 24

for step in range(1, STEPS + 1):
    model.train()
    xb, yb = data.sample(BATCH)
    xb, yb = xb.to(device), yb.to(device)
    pred, aux, counts = model(xb)
    task_loss = F.mse_loss(pred, yb)
    loss = task_loss + AUX_WEIGHT * aux
    loss.backward()
    if step % 50 == 0:
        router_gn = model.moe.router.weight.grad.norm().item()
    optimizer.zero_grad(set_to_none=True)
    optimizer.step()

    if step % 50 == 0:
        model.eval()
        with torch.no_grad():
            vpred, vaux, vcounts = model(x_val)
            val_mse = F.mse_loss(vpred, y_val).item()
        print(f"step {step:4d}  task {task_loss.item():.4f}  aux {aux.item():.3f}  val mse {val_mse:.4f}  "
              f"router |g| {router_gn:.2e}  batch counts {counts.tolist()}  idle experts {(counts == 0).sum().item()}")

with torch.no_grad():
    _, _, vcounts = model(x_val)
print("validation tokens per expert:", vcounts.tolist())
