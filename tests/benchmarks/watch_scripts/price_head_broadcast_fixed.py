"""House-price style regression with a FARM-like "regression head": a feature encoder (2 hidden
layers), a head Linear(64, 1) whose output is squeezed to (B,) for the loss in the library code,
and log-prices as targets stored as a (B, 1) column by the data loader. MSELoss, Adam with a
StepLR per epoch, validation RMSE. Fixed version: the (B, 1) targets are squeezed to (B,) like the prediction.
Written from: https://github.com/deepset-ai/FARM/issues/229
expect: -
"""
import warnings

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore", category=UserWarning)
torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class RegressionHead(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.out = nn.Linear(64, 1)

    def forward(self, x):
        return self.out(self.encoder(x)).squeeze(-1)


def houses(n, gen):
    x = torch.randn(n, 10, generator=gen)
    log_price = 12 + 0.3 * x[:, 0] + 0.2 * x[:, 1] * x[:, 2] - 0.1 * x[:, 3] ** 2 + 0.05 * torch.randn(n, generator=gen)
    return x, log_price.unsqueeze(1)


def main():
    gen = torch.Generator().manual_seed(15)
    x, y = houses(2000, gen)
    xv, yv = houses(500, gen)
    mean, std = y.mean(), y.std()
    loader = DataLoader(TensorDataset(x, (y - mean) / std), batch_size=64, shuffle=True)
    model = RegressionHead(10).to(device)
    loss_fn = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    for epoch in range(4):
        model.train()
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb.to(device)), yb.squeeze(1).to(device))
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            pred = model(xv.to(device)).cpu() * std + mean
            rmse = ((pred - yv.squeeze(1)) ** 2).mean().sqrt().item()
        print(f"epoch {epoch} train {loss.item():.4f} val rmse {rmse:.4f}")


if __name__ == "__main__":
    main()
