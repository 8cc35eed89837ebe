"""Full-batch L-BFGS fit of a small MLP surrogate to a noisy 2-D response surface.

A common scientific-ML recipe: a small smooth (Tanh) network is fitted to a few hundred noisy
samples of an analytic response surface with torch.optim.LBFGS and a strong-Wolfe line search.
Every optimizer step calls the closure several times (one forward/backward per function
evaluation), so the closure zeroes the gradients itself and the number of forward passes per step
varies. Inputs and targets are standardised, the targets are stored as a flat vector of shape (N,),
and a held-out grid is evaluated under no_grad after every outer step with simple early stopping
on the validation MSE (best weights kept in an in-memory state dict). Bug: the closure computes
the loss from the (N, 1) network output and the (N,) targets without squeezing, so the squared
error broadcasts to an (N, N) matrix and the fit collapses toward the target mean.

expect: broadcast
"""
import copy
import math

import numpy as np
import torch
from torch import nn

torch.manual_seed(0)
np.random.seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu")


def response(x1, x2):
    return np.sin(2.0 * x1) * np.cos(1.5 * x2) + 0.3 * x1 * x2 - 0.2 * x2 ** 2


def make_split(n, noise, rng):
    X = rng.uniform(-2.0, 2.0, size=(n, 2))
    y = response(X[:, 0], X[:, 1]) + noise * rng.standard_normal(n)
    return X.astype(np.float32), y.astype(np.float32)


rng = np.random.default_rng(0)
X_tr, y_tr = make_split(400, 0.05, rng)
X_va, y_va = make_split(200, 0.0, rng)

x_mu, x_sd = X_tr.mean(0), X_tr.std(0)
y_mu, y_sd = y_tr.mean(), y_tr.std()

Xtr = torch.from_numpy((X_tr - x_mu) / x_sd).to(device)
ytr = torch.from_numpy((y_tr - y_mu) / y_sd).to(device)          # shape (N,)
Xva = torch.from_numpy((X_va - x_mu) / x_sd).to(device)
yva = torch.from_numpy((y_va - y_mu) / y_sd).to(device)


class Surrogate(nn.Module):
    def __init__(self, width=48, depth=3):
        super().__init__()
        layers, d = [], 2
        for _ in range(depth):
            layers += [nn.Linear(d, width), nn.Tanh()]
            d = width
        layers.append(nn.Linear(d, 1))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)                                   # (N, 1)


model = Surrogate().to(device)
optimizer = torch.optim.LBFGS(model.parameters(), lr=1.0, max_iter=20, history_size=20,
                              line_search_fn="strong_wolfe")
n_evals = 0


def closure():
    global n_evals
    optimizer.zero_grad()
    pred = model(Xtr)
    loss = torch.mean((pred - ytr) ** 2)
    loss.backward()
    n_evals += 1
    return loss


best_val, best_state, patience, bad = math.inf, None, 6, 0
for outer in range(40):
    model.train()
    train_loss = optimizer.step(closure)

    model.eval()
    with torch.no_grad():
        val_mse = torch.mean((model(Xva).squeeze(-1) - yva) ** 2).item()
    if val_mse < best_val - 1e-6:
        best_val, best_state, bad = val_mse, copy.deepcopy(model.state_dict()), 0
    else:
        bad += 1
    if outer % 5 == 0:
        print(f"step {outer:3d}  train {train_loss.item():.5f}  val {val_mse:.5f}  closure evals {n_evals}")
    if bad >= patience:
        print(f"early stop at step {outer}")
        break

model.load_state_dict(best_state)
with torch.no_grad():
    rmse = torch.sqrt(torch.mean((model(Xva).squeeze(-1) - yva) ** 2)).item() * y_sd
print(f"best val mse (standardised) {best_val:.5f}   val RMSE (original units) {rmse:.4f}")
