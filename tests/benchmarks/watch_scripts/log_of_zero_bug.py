"""Count regression with a Poisson-style log link: log(counts) of features that contain zeros.

expect: non-finite
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(7)

counts = torch.poisson(torch.full((800, 8), 2.0))  # many exact zeros
rate = counts[:, :3].mean(1) + 0.5
loader = DataLoader(TensorDataset(counts, rate), batch_size=40, shuffle=True)


class LogLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 1)

    def forward(self, c):
        return self.lin(torch.log(c)).squeeze(-1)


model = LogLinear().to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
for epoch in range(3):
    for c, r in loader:
        c, r = c.to(device), r.to(device)
        log_rate = model(c)
        loss = (torch.exp(log_rate) - r * log_rate).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("epoch", epoch, loss.item())
