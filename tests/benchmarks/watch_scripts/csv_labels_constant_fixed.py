"""Churn prediction from a CSV export: rows are parsed with the csv module, numeric columns are
standardised, the "Churn" column ("Yes"/"No") becomes a float target, and a small MLP with a
single logit is trained with BCEWithLogitsLoss, SGD with momentum and a ReduceLROnPlateau on the
validation loss. Fixed version: the label is compared case-insensitively, so churned customers get 1.0.
Written from: https://github.com/btheodorou99/HALO_Inpatient/issues/13
expect: -
"""
import csv
import io
import random

import torch
import torch.nn as nn

torch.manual_seed(0)
random.seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def export_csv(n):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["tenure", "monthly", "tickets", "logins", "Churn"])
    for _ in range(n):
        tenure, monthly = random.expovariate(1 / 20), random.gauss(60, 20)
        tickets, logins = random.randint(0, 8), random.gauss(15, 6)
        risk = -0.08 * tenure + 0.03 * monthly + 0.4 * tickets - 0.1 * logins + random.gauss(0, 1)
        writer.writerow([f"{tenure:.1f}", f"{monthly:.2f}", tickets, f"{logins:.1f}", "Yes" if risk > 0.5 else "No"])
    return out.getvalue()


def parse(text):
    rows = list(csv.DictReader(io.StringIO(text)))
    x = torch.tensor([[float(r[k]) for k in ("tenure", "monthly", "tickets", "logins")] for r in rows])
    y = torch.tensor([float(r["Churn"].strip().lower() == "yes") for r in rows])
    return x, y


def main():
    x, y = parse(export_csv(2000))
    x = (x - x[:1600].mean(0)) / x[:1600].std(0)
    xt, yt, xv, yv = x[:1600], y[:1600], x[1600:], y[1600:]
    model = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)
    loss_fn = nn.BCEWithLogitsLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=1)
    for epoch in range(5):
        model.train()
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            idx = perm[i: i + 64]
            optimizer.zero_grad()
            loss = loss_fn(model(xt[idx].to(device)).squeeze(1), yt[idx].to(device))
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = loss_fn(model(xv.to(device)).squeeze(1), yv.to(device)).item()
        plateau.step(val)
        print(f"epoch {epoch} train {loss.item():.4f} val {val:.4f}")


if __name__ == "__main__":
    main()
