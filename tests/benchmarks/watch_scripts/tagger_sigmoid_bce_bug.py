"""Multi-label image tagger (small CNN on 16x16 synthetic images, 6 tags, each tag a shape drawn
in a channel) trained with BCEWithLogitsLoss and pos_weight for rare tags, AdamW, a cosine
schedule stepped once per epoch, and a micro-F1 evaluation at threshold 0.5. Bug: the model's
forward already returns torch.sigmoid(logits) and the loss is BCEWithLogitsLoss, which applies a
sigmoid again: every prediction the loss sees lies in [0.5, 0.73], so no tag can be learned well.
Written from: https://github.com/avBuffer/UNet3plus_pth/issues/23
expect: probabilities as logits
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
TAGS = 6


def make_images(n, gen):
    tags = (torch.rand(n, TAGS, generator=gen) < torch.linspace(0.1, 0.5, TAGS)).float()
    images = 0.3 * torch.randn(n, 3, 16, 16, generator=gen)
    for t in range(TAGS):
        rows = tags[:, t].bool()
        r, c = divmod(t, 3)
        images[rows, t % 3, 2 + 6 * r: 6 + 6 * r, 2 + 5 * c: 6 + 5 * c] += 1.5
    return images, tags


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
        )
        self.classifier = nn.Linear(128, TAGS)

    def forward(self, x):
        logits = self.classifier(self.features(x).flatten(1))
        return torch.sigmoid(logits)


def micro_f1(probs, tags):
    pred = (probs > 0.5).float()
    tp = (pred * tags).sum()
    return (2 * tp / (pred.sum() + tags.sum()).clamp(min=1)).item()


def main():
    gen = torch.Generator().manual_seed(3)
    x, y = make_images(800, gen)
    xv, yv = make_images(400, gen)
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = Tagger().to(device)
    pos_weight = ((1 - y.mean(0)) / y.mean(0)).to(device)
    criterion = nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=3)
    for epoch in range(3):
        model.train()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad(set_to_none=True)
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            f1 = micro_f1(model(xv.to(device)).cpu(), yv)
        print(f"epoch {epoch} loss {loss.item():.4f} val micro-F1 {f1:.3f}")


if __name__ == "__main__":
    main()
