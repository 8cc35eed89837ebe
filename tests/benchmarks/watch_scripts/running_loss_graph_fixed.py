"""Multi-task regression (an MSE head and a cross-entropy head on shared features) with running
sums of each loss for the epoch report, as in many research repositories: `running_loss +=
loss`, `running_mse += mse`, `running_ce += ce`, reported as averages at the end of each epoch;
Adam, 5 epochs. Fixed version: the running sums add Python floats (loss.item()).
Written from: https://github.com/samuelyu2002/ImVisible/issues/2
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.shared = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU())
        self.reg = nn.Linear(256, 1)
        self.cls = nn.Linear(256, 5)

    def forward(self, x):
        h = self.shared(x)
        return self.reg(h).squeeze(1), self.cls(h)


def main():
    gen = torch.Generator().manual_seed(20)
    x = torch.randn(4000, 32, generator=gen)
    target = x[:, :4].sum(1)
    label = (x[:, 4:9].argmax(1))
    model = TwoHeads().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        running_loss = running_mse = running_ce = 0.0
        perm = torch.randperm(len(x))
        batches = 0
        for i in range(0, len(x), 64):
            idx = perm[i: i + 64]
            pred, logits = model(x[idx].to(device))
            mse = F.mse_loss(pred, target[idx].to(device))
            ce = F.cross_entropy(logits, label[idx].to(device))
            loss = mse + 0.5 * ce
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            running_loss += loss.item()
            running_mse += mse.item()
            running_ce += ce.item()
            batches += 1
        print(f"epoch {epoch} loss {running_loss / batches:.4f} mse {running_mse / batches:.4f} ce {running_ce / batches:.4f}")


if __name__ == "__main__":
    main()
