"""Sequence classifier for sensor windows (batch, time, channels): a 1-D convolution front end,
then attention pooling over time (a scoring MLP gives one score per time step, the scores are
softmaxed into weights, the weighted sum of the features is the window's embedding) and a linear
head for 5 activities. AdamW, gradient clipping, validation accuracy per epoch. Bug: the attention
weights are computed with torch.softmax(scores, dim=0) on the (batch, time) score matrix, so each
time step's weights sum to one across the windows of the batch instead of across time: the pooled
embedding of a window depends on the other windows in its batch.
Written from: https://github.com/ctallec/world-models/issues/10
expect: softmax over batch
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
T, C, K = 50, 6, 5


def windows(n, gen):
    labels = torch.randint(0, K, (n,), generator=gen)
    t = torch.linspace(0, 4 * torch.pi, T)
    base = torch.sin((labels[:, None, None] + 1) * t[None, :, None] * 0.5 + torch.arange(C) * 0.3)
    burst = torch.zeros(n, T, C)
    start = torch.randint(0, T - 10, (n,), generator=gen)
    for i in range(n):
        burst[i, start[i]: start[i] + 10, labels[i] % C] = 2.0
    return base + burst + 0.5 * torch.randn(n, T, C, generator=gen), labels


class AttnPoolNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(C, 32, 5, padding=2), nn.ReLU(), nn.Conv1d(32, 32, 5, padding=2), nn.ReLU())
        self.score = nn.Sequential(nn.Linear(32, 16), nn.Tanh(), nn.Linear(16, 1))
        self.head = nn.Linear(32, K)

    def forward(self, x):
        h = self.conv(x.transpose(1, 2)).transpose(1, 2)
        weights = torch.softmax(self.score(h).squeeze(-1), dim=0)
        return self.head((weights.unsqueeze(-1) * h).sum(1))


def main():
    gen = torch.Generator().manual_seed(14)
    x, y = windows(800, gen)
    xv, yv = windows(400, gen)
    model = AttnPoolNet().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for epoch in range(3):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 32):
            idx = perm[i: i + 32]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[idx].to(device)), y[idx].to(device))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            acc = (model(xv.to(device)).argmax(1).cpu() == yv).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} val acc {acc:.3f}")


if __name__ == "__main__":
    main()
