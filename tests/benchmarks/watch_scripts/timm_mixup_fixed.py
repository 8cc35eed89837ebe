"""Train a small ResNet-ish CNN on a synthetic, class-imbalanced 4-class image set with a
timm-style recipe: a `Mixup` object that applies mixup or cutmix per batch (with label
smoothing) and returns soft targets, a `SoftTargetCrossEntropy`-like per-sample loss that is
re-weighted by class-balanced weights (soft targets mix the weights of both source classes),
SGD with Nesterov momentum and a warm-up + cosine schedule stepped once per epoch, a
`ModelEmaV2`-like EMA copy updated under no_grad, and validation of both the model and its EMA
in eval mode. Fixed version: the (B, 1) per-sample weights are squeezed to (B,) before weighting the per-sample losses.
expect: -
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(0)
np.random.seed(0)

NUM_CLASSES = 4
CLASS_FREQ = np.array([0.55, 0.25, 0.12, 0.08])


def make_images(n, rng):
    """Each class is a coloured blob in its own quadrant."""
    labels = rng.choice(NUM_CLASSES, size=n, p=CLASS_FREQ)
    yy, xx = np.mgrid[0:16, 0:16].astype(np.float32)
    imgs = rng.normal(0, 0.6, size=(n, 3, 16, 16)).astype(np.float32)
    centers = [(4, 4), (4, 11), (11, 4), (11, 11)]
    for i, c in enumerate(labels):
        cy, cx = centers[c]
        blob = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
        if c < 3:
            imgs[i, c] += 1.5 * blob
        else:
            imgs[i, 1:] += 1.0 * blob
    return torch.from_numpy(imgs), torch.from_numpy(labels).long()


def one_hot(x, num_classes, on_value=1.0, off_value=0.0):
    x = x.long().view(-1, 1)
    return torch.full((x.size(0), num_classes), off_value, device=x.device).scatter_(1, x, on_value)


def mixup_target(target, num_classes, lam=1.0, smoothing=0.0):
    off_value = smoothing / num_classes
    on_value = 1.0 - smoothing + off_value
    y1 = one_hot(target, num_classes, on_value=on_value, off_value=off_value)
    y2 = one_hot(target.flip(0), num_classes, on_value=on_value, off_value=off_value)
    return y1 * lam + y2 * (1.0 - lam)


def rand_bbox(img_shape, lam, rng):
    H, W = img_shape[-2:]
    cut_rat = math.sqrt(1.0 - lam)
    cut_h, cut_w = int(H * cut_rat), int(W * cut_rat)
    cy, cx = rng.randint(0, H), rng.randint(0, W)
    yl, yh = np.clip(cy - cut_h // 2, 0, H), np.clip(cy + cut_h // 2, 0, H)
    xl, xh = np.clip(cx - cut_w // 2, 0, W), np.clip(cx + cut_w // 2, 0, W)
    return yl, yh, xl, xh


class Mixup:
    def __init__(self, mixup_alpha=0.8, cutmix_alpha=1.0, prob=1.0, switch_prob=0.5,
                 label_smoothing=0.1, num_classes=1000, seed=0):
        self.mixup_alpha, self.cutmix_alpha = mixup_alpha, cutmix_alpha
        self.mix_prob, self.switch_prob = prob, switch_prob
        self.label_smoothing, self.num_classes = label_smoothing, num_classes
        self.rng = np.random.RandomState(seed)

    def _params(self):
        if self.rng.rand() > self.mix_prob:
            return 1.0, False
        use_cutmix = self.rng.rand() < self.switch_prob
        alpha = self.cutmix_alpha if use_cutmix else self.mixup_alpha
        return float(self.rng.beta(alpha, alpha)), use_cutmix

    def __call__(self, x, target):
        assert len(x) % 2 == 0, "Batch size should be even when using this"
        lam, use_cutmix = self._params()
        if lam != 1.0:
            if use_cutmix:
                yl, yh, xl, xh = rand_bbox(x.shape, lam, self.rng)
                x[:, :, yl:yh, xl:xh] = x.flip(0)[:, :, yl:yh, xl:xh]
                lam = 1.0 - (yh - yl) * (xh - xl) / float(x.shape[-2] * x.shape[-1])
            else:
                x.mul_(lam).add_(x.flip(0).mul_(1.0 - lam))
        target = mixup_target(target, self.num_classes, lam, self.label_smoothing)
        return x, target


class SoftTargetCrossEntropy(nn.Module):
    def forward(self, x, target):
        return torch.sum(-target * F.log_softmax(x, dim=-1), dim=-1)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class TinyResNet(nn.Module):
    def __init__(self, num_classes, width=12, drop_rate=0.2):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.stage1 = BasicBlock(width, width)
        self.stage2 = BasicBlock(width, 2 * width, stride=2)
        self.drop_rate = drop_rate
        self.head = nn.Linear(2 * width, num_classes)

    def forward(self, x):
        x = self.stage2(self.stage1(self.stem(x)))
        x = x.mean(dim=(2, 3))
        x = F.dropout(x, p=self.drop_rate, training=self.training)
        return self.head(x)


class ModelEmaV2(nn.Module):
    def __init__(self, model, decay=0.99):
        super().__init__()
        self.module = copy.deepcopy(model)
        self.module.eval()
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_v.dtype.is_floating_point:
                ema_v.copy_(self.decay * ema_v + (1.0 - self.decay) * model_v)
            else:
                ema_v.copy_(model_v)


def cosine_lr(epoch, base_lr, warmup_epochs, total_epochs, warmup_lr=1e-3, min_lr=1e-4):
    if epoch < warmup_epochs:
        return warmup_lr + (base_lr - warmup_lr) * epoch / warmup_epochs
    t = (epoch - warmup_epochs) / max(1, total_epochs - warmup_epochs)
    return min_lr + 0.5 * (base_lr - min_lr) * (1 + math.cos(math.pi * t))


@torch.no_grad()
def validate(model, x_val, y_val):
    model.eval()
    logits = model(x_val.to(device))
    preds = logits.argmax(-1).cpu()
    acc = (preds == y_val).float().mean().item()
    per_class = [(preds[y_val == c] == c).float().mean().item() for c in range(NUM_CLASSES)]
    return acc, per_class


def main():
    rng = np.random.RandomState(0)
    x_train, y_train = make_images(768, rng)
    x_val, y_val = make_images(512, rng)

    counts = np.bincount(y_train.numpy(), minlength=NUM_CLASSES)
    cls_weights = torch.tensor(len(y_train) / (NUM_CLASSES * counts), dtype=torch.float32, device=device).view(-1, 1)

    model = TinyResNet(NUM_CLASSES).to(device)
    model_ema = ModelEmaV2(model, decay=0.98)
    mixup_fn = Mixup(mixup_alpha=0.4, cutmix_alpha=1.0, prob=0.8, switch_prob=0.5,
                     label_smoothing=0.1, num_classes=NUM_CLASSES)
    train_loss_fn = SoftTargetCrossEntropy()
    base_lr, epochs, warmup_epochs, batch_size = 0.2, 6, 1, 64
    optimizer = torch.optim.SGD(model.parameters(), lr=base_lr, momentum=0.9, nesterov=True, weight_decay=5e-4)

    num_updates = 0
    for epoch in range(epochs):
        lr = cosine_lr(epoch, base_lr, warmup_epochs, epochs)
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.train()
        perm = torch.randperm(len(x_train))
        loss_sum, n_batches = 0.0, 0
        for i in range(0, len(x_train), batch_size):
            idx = perm[i:i + batch_size]
            inputs, target = x_train[idx].to(device), y_train[idx].to(device)
            inputs, target = mixup_fn(inputs, target)
            output = model(inputs)
            per_sample = train_loss_fn(output, target)
            sample_w = (target @ cls_weights).squeeze(1)
            loss = (per_sample * sample_w).sum() / sample_w.sum()

            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
            optimizer.step()
            model_ema.update(model)
            num_updates += 1
            loss_sum += loss.item()
            n_batches += 1
        acc, per_class = validate(model, x_val, y_val)
        ema_acc, _ = validate(model_ema.module, x_val, y_val)
        print(f"epoch {epoch} lr {lr:.4f} loss {loss_sum / n_batches:.4f} val_acc {acc:.3f} "
              f"ema_acc {ema_acc:.3f} per_class {[round(p, 2) for p in per_class]}")


if __name__ == "__main__":
    main()
