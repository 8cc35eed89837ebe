"""Regression of a smooth 8-dimensional function with a 4-layer MLP, using the usual "linear
warm-up then cosine decay" schedule sized in optimizer steps (warm-up 10% of the total steps,
total = epochs x batches per epoch) through a LambdaLR, SGD with momentum and Nesterov, and a
validation RMSE per epoch. Fixed version: scheduler.step() is called after every optimizer step, as the schedule is sized in
steps.
Written from: https://github.com/galilai-group/stable-worldmodel/issues/280
expect: -
"""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def target(x):
    return torch.sin(x[:, :4].sum(1)) + 0.5 * torch.cos(2 * x[:, 4:]).prod(1)


def main():
    gen = torch.Generator().manual_seed(5)
    x = torch.rand(3200, 8, generator=gen) * 2 - 1
    y = target(x).unsqueeze(1)
    xv = torch.rand(800, 8, generator=gen) * 2 - 1
    yv = target(xv).unsqueeze(1)
    model = nn.Sequential(nn.Linear(8, 128), nn.SiLU(), nn.Linear(128, 128), nn.SiLU(),
                          nn.Linear(128, 64), nn.SiLU(), nn.Linear(64, 1)).to(device)
    epochs, batch = 8, 64
    total = epochs * (len(x) // batch)
    warm = int(0.1 * total)

    def schedule(step):
        if step < warm:
            return (step + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (step - warm) / (total - warm)))

    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
    loss_fn = nn.MSELoss()
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), batch):
            idx = perm[i: i + batch]
            optimizer.zero_grad()
            loss = loss_fn(model(x[idx].to(device)), y[idx].to(device))
            loss.backward()
            optimizer.step()
            scheduler.step()
        model.eval()
        with torch.no_grad():
            rmse = loss_fn(model(xv.to(device)), yv.to(device)).sqrt().item()
        print(f"epoch {epoch} lr {scheduler.get_last_lr()[0]:.2e} train {loss.item():.4f} val rmse {rmse:.4f}")


if __name__ == "__main__":
    main()
