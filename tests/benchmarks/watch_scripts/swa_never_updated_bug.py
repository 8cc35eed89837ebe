"""Stochastic weight averaging with torch.optim.swa_utils, as in the PyTorch SWA tutorial: an MLP
regressor for a tabular target is trained with SGD and a cosine schedule; from epoch swa_start on,
the averaged model (AveragedModel) collects the weights once per epoch and an SWALR schedule
takes over, and the averaged model is the one evaluated and kept. Bug: the switch is written
"epoch > swa_start" with swa_start = epochs - 1, so the condition is never true:
swa_model.update_parameters(model) never runs and the model evaluated at the end is the untrained
copy made when AveragedModel was built.
Written from: https://github.com/acids-ircam/diffusion_models/issues/10
expect: stale copy
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def table(n, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=gen)
    y = (torch.sin(x[:, :4]).sum(1) + 0.3 * x[:, 4] * x[:, 5]).unsqueeze(1)
    return x, y + 0.05 * torch.randn(n, 1, generator=gen)


def main():
    x, y = table(3000, 1)
    xv, yv = table(600, 2)
    model = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1)).to(device)
    swa_model = AveragedModel(model)
    epochs = 8
    swa_start = epochs - 1
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    swa_scheduler = SWALR(optimizer, swa_lr=0.01)
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x))
        for i in range(0, len(x), 50):
            idx = order[i: i + 50]
            optimizer.zero_grad()
            F.mse_loss(model(x[idx].to(device)), y[idx].to(device)).backward()
            optimizer.step()
        if epoch > swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
        else:
            scheduler.step()
        with torch.no_grad():
            print(f"epoch {epoch} val mse (model) {F.mse_loss(model(xv.to(device)), yv.to(device)).item():.4f}")
    swa_model.eval()
    with torch.no_grad():
        print(f"final val mse (swa) {F.mse_loss(swa_model(xv.to(device)), yv.to(device)).item():.4f}")


if __name__ == "__main__":
    main()
