"""Forecasting next-step values of irregular-length series (sensor logs of 20 to 60 readings)
with an LSTM: series are right-padded with zeros to the batch's longest by pad_sequence, a
lengths tensor is kept for the mask, and the model predicts each next value. Adam, gradient
clipping, validation MAE over real steps. Fixed version: the training loss averages the squared errors over real steps only, with the mask.
Written from: https://github.com/hpcaitech/Open-Sora/pull/7
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def series(n, gen):
    out = []
    for _ in range(n):
        length = int(torch.randint(20, 61, (1,), generator=gen))
        t = torch.arange(length, dtype=torch.float32)
        level = 2.0 + torch.rand(1, generator=gen) * 3
        out.append(level + torch.sin(t / 4 + torch.rand(1, generator=gen) * 6) + 0.1 * torch.randn(length, generator=gen))
    lengths = torch.tensor([len(s) for s in out])
    return pad_sequence(out, batch_first=True), lengths


class Forecaster(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(1, 48, batch_first=True)
        self.out = nn.Linear(48, 1)

    def forward(self, x):
        h, _ = self.lstm(x.unsqueeze(-1))
        return self.out(h).squeeze(-1)


def main():
    gen = torch.Generator().manual_seed(21)
    model = Forecaster().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(3):
        model.train()
        for _ in range(25):
            padded, lengths = series(32, gen)
            inputs, target = padded[:, :-1].to(device), padded[:, 1:].to(device)
            pred = model(inputs)
            mask = (torch.arange(target.shape[1])[None] < (lengths - 1)[:, None]).to(device)
            loss = ((pred - target) ** 2 * mask).sum() / mask.sum()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            padded, lengths = series(128, gen)
            pred = model(padded[:, :-1].to(device)).cpu()
            mask = torch.arange(padded.shape[1] - 1)[None] < (lengths - 1)[:, None]
            mae = ((pred - padded[:, 1:]).abs() * mask).sum() / mask.sum()
        print(f"epoch {epoch} train {loss.item():.4f} val MAE {mae.item():.4f}")


if __name__ == "__main__":
    main()
