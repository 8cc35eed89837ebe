"""Physics-informed neural network for the 1D Poisson problem u''(x) = -pi^2 sin(pi x)
on [0, 1] with u(0) = u(1) = 0, combined with a handful of observations of the
solution (data assimilation). The PDE residual is obtained with nested
torch.autograd.grad(create_graph=True) calls inside the loss so that the optimizer
can differentiate through the second derivative; the residual term carries a weight
lambda_pde and the boundary term its own weight. Collocation points are resampled
every step. The data-misfit term is a relative error, so that the data and physics
terms have comparable scale. Progress is reported as the relative L2 error against
the analytic solution sin(pi x) on a fine grid.
expect: -
"""
import math
import torch
import torch.nn as nn

torch.manual_seed(42)
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")


class PINN(nn.Module):
    def __init__(self, width=32, depth=3):
        super().__init__()
        layers, d_in = [], 1
        for _ in range(depth):
            layers += [nn.Linear(d_in, width), nn.Tanh()]
            d_in = width
        layers.append(nn.Linear(d_in, 1))
        self.mlp = nn.Sequential(*layers)
        for m in self.mlp:
            if isinstance(m, nn.Linear):
                nn.init.xavier_normal_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.mlp(x)


def forcing(x):
    return -(math.pi ** 2) * torch.sin(math.pi * x)


def pde_residual(model, x):
    x = x.requires_grad_(True)
    u = model(x)
    (u_x,) = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), create_graph=True)
    (u_xx,) = torch.autograd.grad(u_x, x, grad_outputs=torch.ones_like(u_x), create_graph=True)
    return u_xx - forcing(x)


model = PINN().to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[170, 250], gamma=0.3)

x_obs = torch.linspace(0.0, 0.5, 6, device=device).unsqueeze(1)
u_obs = torch.sin(math.pi * x_obs)
x_bc = torch.tensor([[0.0], [1.0]], device=device)
x_test = torch.linspace(0, 1, 201, device=device).unsqueeze(1)
u_test = torch.sin(math.pi * x_test)

LAMBDA_PDE, LAMBDA_BC, N_COLLOC, ITERS = 0.05, 10.0, 64, 300

for it in range(ITERS):
    x_col = torch.rand(N_COLLOC, 1, device=device)
    res = pde_residual(model, x_col)
    loss_pde = res.pow(2).mean()
    loss_bc = model(x_bc).pow(2).mean()
    u_pred = model(x_obs)
    loss_data = (u_pred - u_obs).pow(2).sum() / u_obs.pow(2).sum()
    loss = loss_data + LAMBDA_PDE * loss_pde + LAMBDA_BC * loss_bc

    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()

    if it % 60 == 0 or it == ITERS - 1:
        with torch.no_grad():
            rel_l2 = (model(x_test) - u_test).norm() / u_test.norm()
        print(f"it {it:3d} | data {loss_data.item():.3e} | pde {loss_pde.item():.3e} "
              f"| bc {loss_bc.item():.3e} | rel L2 {rel_l2.item():.3e}")
