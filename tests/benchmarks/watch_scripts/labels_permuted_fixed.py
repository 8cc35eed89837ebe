"""Medical-tabular style pipeline: features and labels are loaded as two arrays, shuffled before
the train/validation split, standardised with training statistics, and a 3-layer MLP with
dropout is trained with Adam and class weights for the imbalanced 3-class target; the validation
accuracy and the loss are printed every epoch. Fixed version: one permutation shuffles features and labels together.
Written from: https://github.com/mlcommons/GaNDLF/pull/870
expect: -
"""
import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def load_arrays(rng):
    x = rng.normal(size=(3000, 20)).astype(np.float32)
    score = x[:, :3] @ np.array([1.5, -2.0, 1.0], dtype=np.float32) + 0.5 * x[:, 3] * x[:, 4]
    y = np.digitize(score, [-1.0, 1.5]).astype(np.int64)
    return x, y


def main():
    rng = np.random.default_rng(10)
    x, y = load_arrays(rng)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    split = int(0.8 * len(x))
    mean, std = x[:split].mean(0), x[:split].std(0)
    xt = torch.from_numpy((x[:split] - mean) / std)
    yt = torch.from_numpy(y[:split])
    xv = torch.from_numpy((x[split:] - mean) / std)
    yv = torch.from_numpy(y[split:])
    counts = torch.bincount(yt, minlength=3).float()
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 3)).to(device)
    loss_fn = nn.CrossEntropyLoss(weight=(counts.sum() / counts / 3).to(device))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(5):
        model.train()
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            idx = perm[i: i + 64]
            optimizer.zero_grad()
            loss = loss_fn(model(xt[idx].to(device)), yt[idx].to(device))
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xv.to(device)).argmax(1).cpu() == yv).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} val acc {acc:.3f}")


if __name__ == "__main__":
    main()
