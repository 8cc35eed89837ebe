"""Keyword-spotting style audio classifier on synthetic 1-D waveforms.

Each clip is 0.1 s of 8 kHz "audio": a class-specific pair of tones with a random
phase, a short chirp, random gain and background noise.  A small 1-D conv net
(strided stem, residual conv blocks with BatchNorm, an optional squeeze-and-excitation
gate, global average pooling) classifies 6 keywords.  Training uses AdamW with a
OneCycleLR schedule stepped every batch, gradient clipping, a SpecAugment-like time
mask built directly on the device, periodic .item() logging and a held-out
evaluation in eval mode under no_grad.  This is the fixed version: the SE gate that
the config enables is actually applied in forward().

expect: -
"""
import math
import random
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

SEED = 1234
random.seed(SEED)
np.random.seed(SEED)
torch.manual_seed(SEED)


@dataclass
class KWSConfig:
    n_classes: int = 6
    sample_rate: int = 8000
    clip_len: int = 512
    channels: int = 24
    n_blocks: int = 3
    use_se: bool = True
    se_reduction: int = 4
    dropout: float = 0.1


def make_clips(n, cfg, rng):
    t = np.arange(cfg.clip_len) / cfg.sample_rate
    base = np.linspace(300, 1800, cfg.n_classes)
    labels = rng.integers(0, cfg.n_classes, size=n)
    x = np.empty((n, cfg.clip_len), dtype=np.float32)
    for i, y in enumerate(labels):
        f0 = base[y] * rng.uniform(0.97, 1.03)
        ph = rng.uniform(0, 2 * math.pi, size=2)
        chirp = np.sin(2 * math.pi * (200 + 1500 * t) * t) * (y % 2)
        sig = np.sin(2 * math.pi * f0 * t + ph[0]) + 0.5 * np.sin(2 * math.pi * 2.3 * f0 * t + ph[1])
        sig = rng.uniform(0.3, 1.0) * (sig + 0.4 * chirp)
        x[i] = sig + rng.normal(0, 0.6, size=cfg.clip_len)
    return x, labels.astype(np.int64)


class SqueezeExcite1d(nn.Module):
    def __init__(self, ch, reduction):
        super().__init__()
        self.fc1 = nn.Linear(ch, ch // reduction)
        self.fc2 = nn.Linear(ch // reduction, ch)

    def forward(self, x):
        s = x.mean(dim=-1)
        s = torch.sigmoid(self.fc2(F.relu(self.fc1(s))))
        return x * s.unsqueeze(-1)


class ResBlock1d(nn.Module):
    def __init__(self, ch, kernel=7, dilation=1):
        super().__init__()
        pad = dilation * (kernel - 1) // 2
        self.conv1 = nn.Conv1d(ch, ch, kernel, padding=pad, dilation=dilation, bias=False)
        self.bn1 = nn.BatchNorm1d(ch)
        self.conv2 = nn.Conv1d(ch, ch, kernel, padding=pad, dilation=dilation, bias=False)
        self.bn2 = nn.BatchNorm1d(ch)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(x + h)


class KWSNet(nn.Module):
    def __init__(self, cfg: KWSConfig):
        super().__init__()
        self.cfg = cfg
        c = cfg.channels
        self.stem = nn.Sequential(
            nn.Conv1d(1, c, kernel_size=40, stride=8, padding=16, bias=False),
            nn.BatchNorm1d(c),
            nn.ReLU(inplace=True),
        )
        self.blocks = nn.ModuleList([ResBlock1d(c, dilation=2 ** i) for i in range(cfg.n_blocks)])
        if cfg.use_se:
            self.se = SqueezeExcite1d(c, cfg.se_reduction)
        self.drop = nn.Dropout(cfg.dropout)
        self.classifier = nn.Linear(c, cfg.n_classes)

    def forward(self, wav):
        x = self.stem(wav.unsqueeze(1))
        for blk in self.blocks:
            x = blk(x)
        if self.cfg.use_se:
            x = self.se(x)
        x = x.mean(dim=-1)
        return self.classifier(self.drop(x))


def time_mask(wav, max_width=80):
    b, n = wav.shape
    start = torch.randint(0, n - max_width, (b, 1), device=wav.device)
    width = torch.randint(0, max_width, (b, 1), device=wav.device)
    pos = torch.arange(n, device=wav.device).unsqueeze(0)
    mask = (pos >= start) & (pos < start + width)
    return wav.masked_fill(mask, 0.0)


@torch.no_grad()
def evaluate(model, x, y, bs=256):
    model.eval()
    correct, total_loss = 0, 0.0
    for i in range(0, len(x), bs):
        logits = model(x[i:i + bs])
        total_loss += F.cross_entropy(logits, y[i:i + bs], reduction="sum").item()
        correct += (logits.argmax(-1) == y[i:i + bs]).sum().item()
    model.train()
    return total_loss / len(x), correct / len(x)


def main():
    cfg = KWSConfig()
    rng = np.random.default_rng(SEED)
    xtr, ytr = make_clips(1280, cfg, rng)
    xva, yva = make_clips(384, cfg, rng)
    mu, sd = xtr.mean(), xtr.std()
    xtr = torch.from_numpy((xtr - mu) / sd).to(device)
    ytr = torch.from_numpy(ytr).to(device)
    xva = torch.from_numpy((xva - mu) / sd).to(device)
    yva = torch.from_numpy(yva).to(device)

    model = KWSNet(cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=1e-2)
    epochs, bs = 4, 32
    steps_per_epoch = len(xtr) // bs
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-3, epochs=epochs,
                                                steps_per_epoch=steps_per_epoch, pct_start=0.2)

    step = 0
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(len(xtr), device=device)
        for b in range(steps_per_epoch):
            idx = perm[b * bs:(b + 1) * bs]
            wav, y = time_mask(xtr[idx]), ytr[idx]
            logits = model(wav)
            loss = F.cross_entropy(logits, y, label_smoothing=0.05)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            opt.step()
            sched.step()
            step += 1
            if step % 40 == 0:
                print(f"step {step:4d}  loss {loss.item():.4f}  lr {sched.get_last_lr()[0]:.2e}")
        vloss, vacc = evaluate(model, xva, yva)
        print(f"epoch {epoch}  val_loss {vloss:.4f}  val_acc {vacc:.3f}")


if __name__ == "__main__":
    main()
