"""Image classifier (small CNN on synthetic 1x20x20 digits-like glyphs) with a YOLO-style
ModelEMA: the EMA is a deep copy updated after every optimizer step with a decay that ramps up
as 0.999 * (1 - exp(-updates / 200)), and validation uses the EMA model. SGD with Nesterov
momentum, a OneCycle schedule per step, validation accuracy of both the raw and the EMA model.
Fixed version: the EMA tensors are updated in place (v.mul_(d).add_(...)).
Written from: https://github.com/ultralytics/yolov5/issues/5241
expect: -
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class ModelEMA:
    def __init__(self, model, decay=0.999, tau=200):
        self.ema = copy.deepcopy(model).eval()
        self.updates = 0
        self.decay = lambda u: decay * (1 - math.exp(-u / tau))
        for p in self.ema.parameters():
            p.requires_grad_(False)

    def update(self, model):
        with torch.no_grad():
            self.updates += 1
            d = self.decay(self.updates)
            msd = model.state_dict()
            for k, v in self.ema.state_dict().items():
                if v.dtype.is_floating_point:
                    v.mul_(d).add_((1 - d) * msd[k].detach())


def glyphs(n, gen):
    labels = torch.randint(0, 10, (n,), generator=gen)
    images = 0.4 * torch.randn(n, 1, 20, 20, generator=gen)
    for k in range(10):
        rows = labels == k
        images[rows, 0, 2 + k: 6 + k, 3:17] += 1.0
        images[rows, 0, 3:17, 2 + (9 - k): 5 + (9 - k)] += 1.0
    return images, labels


def main():
    gen = torch.Generator().manual_seed(13)
    x, y = glyphs(1200, gen)
    xv, yv = glyphs(500, gen)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(32 * 25, 10)).to(device)
    ema = ModelEMA(model)
    epochs, batch = 3, 64
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=epochs * math.ceil(len(x) / batch))
    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(x))
        for i in range(0, len(x), batch):
            idx = perm[i: i + batch]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[idx].to(device)), y[idx].to(device))
            loss.backward()
            optimizer.step()
            scheduler.step()
            ema.update(model)
        model.eval()
        with torch.no_grad():
            raw = (model(xv.to(device)).argmax(1).cpu() == yv).float().mean().item()
            smooth = (ema.ema(xv.to(device)).argmax(1).cpu() == yv).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} val acc {raw:.3f} EMA val acc {smooth:.3f}")


if __name__ == "__main__":
    main()
