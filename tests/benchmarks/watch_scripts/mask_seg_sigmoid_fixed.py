"""Binary segmentation of blobs in noisy 32x32 images with a small encoder-decoder (two down,
two up, skip connection), trained with F.binary_cross_entropy_with_logits plus a soft Dice term,
Adam, and a validation IoU after each epoch. Fixed version: the decoder returns logits; the BCE takes them, the Dice term and the IoU use the
sigmoid.
Written from: https://github.com/cvg/glue-factory/issues/89
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def blobs(n, gen):
    yy, xx = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
    centers = torch.rand(n, 2, generator=gen) * 24 + 4
    radius = torch.rand(n, generator=gen) * 5 + 3
    dist = ((yy - centers[:, 0, None, None]) ** 2 + (xx - centers[:, 1, None, None]) ** 2).sqrt()
    masks = (dist < radius[:, None, None]).float().unsqueeze(1)
    images = masks * 0.8 + 0.5 * torch.randn(n, 1, 32, 32, generator=gen)
    return images, masks


class TinyUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.down1 = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU())
        self.down2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.out = nn.Conv2d(32, 1, 1)

    def forward(self, x):
        a = self.down1(x)
        b = self.down2(a)
        return self.out(torch.cat([self.up(b), a], 1))


def dice_loss(probs, target, eps=1.0):
    inter = (probs * target).sum((1, 2, 3))
    return 1 - ((2 * inter + eps) / (probs.sum((1, 2, 3)) + target.sum((1, 2, 3)) + eps)).mean()


def main():
    gen = torch.Generator().manual_seed(2)
    x, y = blobs(256, gen)
    xv, yv = blobs(128, gen)
    model = TinyUNet().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(3):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 32):
            idx = perm[i: i + 32]
            xb, yb = x[idx].to(device), y[idx].to(device)
            out = model(xb)
            loss = F.binary_cross_entropy_with_logits(out, yb) + dice_loss(torch.sigmoid(out), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            pred = model(xv.to(device)) > 0
            iou = (pred & yv.bool().to(device)).sum() / (pred | yv.bool().to(device)).sum()
        print(f"epoch {epoch} loss {loss.item():.4f} val IoU {iou.item():.3f}")


if __name__ == "__main__":
    main()
