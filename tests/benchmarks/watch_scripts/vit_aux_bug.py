"""Tiny Vision Transformer on synthetic "oriented bar" images, with an auxiliary localisation head.

Each 16x16 grayscale image contains one short bar at a random position with one of four
orientations plus noise; the main task is the orientation (4 classes) from the CLS token. Because
the tiny ViT learns slowly from scratch, an auxiliary linear head on the CLS token predicts
the image quadrant that contains the bar, weighted by 0.3 in the loss. The training loop uses
AdamW, a linear warm-up + cosine LambdaLR stepped every batch, gradient clipping, and an EMA copy
of the weights that is evaluated under no_grad at the end of every epoch.
Bug: the auxiliary head is attached to the model after the optimizer (and scheduler) were built,
so its weights receive gradients every step but are never updated.

expect: not in optimizer
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")

IMG, PATCH, DIM = 16, 4, 32


def render_bars(n, gen):
    imgs = 0.3 * torch.randn(n, 1, IMG, IMG, generator=gen)
    orient = torch.randint(0, 4, (n,), generator=gen)
    cy = torch.randint(3, IMG - 3, (n,), generator=gen)
    cx = torch.randint(3, IMG - 3, (n,), generator=gen)
    steps = torch.arange(-2, 3)
    dy = torch.tensor([0, 1, 1, 1])[orient]
    dx = torch.tensor([1, 0, 1, -1])[orient]
    ys = cy[:, None] + dy[:, None] * steps
    xs = cx[:, None] + dx[:, None] * steps
    imgs[torch.arange(n)[:, None], 0, ys, xs] += 2.0
    quadrant = (cy >= IMG // 2).long() * 2 + (cx >= IMG // 2).long()
    return imgs, orient, quadrant


class TinyViT(nn.Module):
    def __init__(self, n_classes=4, depth=2, heads=4):
        super().__init__()
        self.patch_embed = nn.Conv2d(1, DIM, kernel_size=PATCH, stride=PATCH)
        n_patches = (IMG // PATCH) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.randn(1, n_patches + 1, DIM) * 0.02)
        layer = nn.TransformerEncoderLayer(DIM, heads, dim_feedforward=2 * DIM, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, n_classes)

    def forward_features(self, x):
        tok = self.patch_embed(x).flatten(2).transpose(1, 2)
        tok = torch.cat([self.cls_token.expand(tok.size(0), -1, -1), tok], 1) + self.pos_embed
        return self.norm(self.encoder(tok))

    def forward(self, x):
        return self.head(self.forward_features(x)[:, 0])


gen = torch.Generator().manual_seed(1)
x_train, y_train, q_train = [t.to(device) for t in render_bars(1152, gen)]
x_val, y_val, q_val = [t.to(device) for t in render_bars(512, gen)]

model = TinyViT().to(device)
epochs, bs = 6, 64
steps_per_epoch = len(x_train) // bs
total_steps, warmup = epochs * steps_per_epoch, 20
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.05)


def lr_lambda(step):
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total_steps - warmup)
    return 0.5 * (1 + math.cos(math.pi * progress))


scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)

# auxiliary quadrant head on the CLS token
model.aux_head = nn.Linear(DIM, 4).to(device)
AUX_WEIGHT = 0.3

ema = copy.deepcopy(model).eval()
for p in ema.parameters():
    p.requires_grad_(False)
ema_decay = 0.95

for epoch in range(epochs):
    model.train()
    perm = torch.randperm(len(x_train), device=device)
    for i in range(steps_per_epoch):
        idx = perm[i * bs:(i + 1) * bs]
        xb, yb, qb = x_train[idx], y_train[idx], q_train[idx]
        feats = model.forward_features(xb)
        main_loss = F.cross_entropy(model.head(feats[:, 0]), yb)
        aux_loss = F.cross_entropy(model.aux_head(feats[:, 0]), qb)
        loss = main_loss + AUX_WEIGHT * aux_loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.lerp_(pm, 1 - ema_decay)
        if i % 12 == 0:
            print(f"ep {epoch} it {i:2d} main {main_loss.item():.3f} aux {aux_loss.item():.3f} "
                  f"lr {scheduler.get_last_lr()[0]:.2e}")

    with torch.no_grad():
        feats = ema.forward_features(x_val)
        acc = (ema.head(feats[:, 0]).argmax(1) == y_val).float().mean()
        q_acc = (ema.aux_head(feats[:, 0]).argmax(1) == q_val).float().mean()
    print(f"== epoch {epoch}: EMA val orientation acc {acc.item():.3f}, quadrant acc {q_acc.item():.3f}")
