"""torchvision-style image classification: a dataset of 3x16x16 "images" whose class sets the
position and colour of a blob, random horizontal flips and normalisation as transforms, a small
VGG-like CNN with batch norm, SGD with momentum and a step schedule, top-1 accuracy on a
validation loader every epoch. The dataset returns (image, index) because its labels live in a
separate array (as with a CSV of annotations). Fixed version: the labels are taken by the indices the dataset returns, labels[index].
Written from: https://github.com/pytorch/pytorch/issues/83270
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
MEAN, STD = 0.1, 0.35


class Blobs(Dataset):
    def __init__(self, n, seed, train=True):
        gen = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, 5, (n,), generator=gen)
        self.images = 0.3 * torch.randn(n, 3, 16, 16, generator=gen)
        for i, c in enumerate(self.labels.tolist()):
            r, col = 2 + 2 * c, 2 + (5 * c) % 11
            self.images[i, c % 3, r: r + 4, col: col + 4] += 1.5
        self.train = train

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        image = self.images[i]
        if self.train and torch.rand(()) < 0.5:
            image = image.flip(-1)
        return (image - MEAN) / STD, i


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def main():
    train, val = Blobs(2000, 1), Blobs(500, 2, train=False)
    batch_size = 50
    loader = DataLoader(train, batch_size=batch_size, shuffle=True)
    val_loader = DataLoader(val, batch_size=250)
    model = nn.Sequential(block(3, 16), nn.MaxPool2d(2), block(16, 32), nn.MaxPool2d(2),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 5)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    labels = train.labels
    for epoch in range(4):
        model.train()
        for i, (images, index) in enumerate(loader):
            target = labels[index]
            loss = F.cross_entropy(model(images.to(device)), target.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        with torch.no_grad():
            hits = sum((model(im.to(device)).argmax(1).cpu() == val.labels[idx]).sum().item() for im, idx in val_loader)
        print(f"epoch {epoch} loss {loss.item():.4f} val top-1 {hits / len(val):.3f}")


if __name__ == "__main__":
    main()
