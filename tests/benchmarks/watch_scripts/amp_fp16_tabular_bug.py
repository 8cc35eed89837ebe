"""Mixed-precision (float16 autocast on CPU) training of a residual MLP classifier on synthetic
tabular data.

The data generator produces a 12-class problem from 40 numeric features (a random teacher network
plus noise). Training runs under torch.autocast(device_type="cpu", dtype=torch.float16) with a
torch.amp.GradScaler. The scaler is started with a deliberately large init_scale, so the first few
iterations overflow in the fp16 backward and the scaler skips those optimizer steps and backs off
the scale (expected behaviour, counted and logged). Gradients are unscaled with scaler.unscale_
before clipping, the learning rate follows a StepLR schedule defined in epochs (decay every 3
epochs) and stepped once per epoch, and the model is evaluated in eval mode under no_grad after
each epoch. Bug: scheduler.step() sits inside the batch loop, so the 3-epoch StepLR decays every
3 batches and the learning rate collapses to ~0 within the first epoch.

expect: lr collapse
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1234)
np.random.seed(1234)
device = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")
amp_device = "cuda" if device == "cuda" else "cpu"

N_FEATURES, N_CLASSES = 40, 12


def synthesize(n, gen):
    x = torch.randn(n, N_FEATURES, generator=gen)
    w1 = torch.randn(N_FEATURES, 64, generator=torch.Generator().manual_seed(99))
    w2 = torch.randn(64, N_CLASSES, generator=torch.Generator().manual_seed(100))
    logits = torch.tanh(x @ w1 / 6.0) @ w2 + 0.3 * torch.randn(n, N_CLASSES, generator=gen)
    return x, logits.argmax(1)


gen = torch.Generator().manual_seed(5)
x_train, y_train = synthesize(2048, gen)
x_val, y_val = synthesize(512, gen)
train_loader = DataLoader(TensorDataset(x_train, y_train), batch_size=128, shuffle=True, drop_last=True)
val_loader = DataLoader(TensorDataset(x_val, y_val), batch_size=512)


class ResBlock(nn.Module):
    def __init__(self, dim, p=0.1):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, dim * 2)
        self.fc2 = nn.Linear(dim * 2, dim)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.norm(x)))))


class TabularNet(nn.Module):
    def __init__(self, d_in, d_model, n_out, n_blocks=2):
        super().__init__()
        self.stem = nn.Linear(d_in, d_model)
        self.blocks = nn.Sequential(*[ResBlock(d_model) for _ in range(n_blocks)])
        self.head = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, n_out))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


model = TabularNet(N_FEATURES, 64, N_CLASSES).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)   # in epochs
scaler = torch.amp.GradScaler(amp_device, init_scale=2.0 ** 24, growth_interval=200)

EPOCHS = 8
skipped = 0
for epoch in range(EPOCHS):
    model.train()
    running, seen = 0.0, 0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type=amp_device, dtype=torch.float16):
            logits = model(xb)
            loss = F.cross_entropy(logits, yb, label_smoothing=0.05)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
        scale_before = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        if scaler.get_scale() < scale_before:
            skipped += 1
        running += loss.detach() * xb.size(0)
        seen += xb.size(0)
        scheduler.step()

    model.eval()
    correct = 0
    with torch.no_grad(), torch.autocast(device_type=amp_device, dtype=torch.float16):
        for xb, yb in val_loader:
            xb, yb = xb.to(device), yb.to(device)
            correct += (model(xb).argmax(1) == yb).sum()
    acc = correct.item() / len(val_loader.dataset)
    print(f"epoch {epoch:2d}  train loss {(running / seen).item():.4f}  val acc {acc:.3f}  "
          f"lr {optimizer.param_groups[0]['lr']:.2e}  scale {scaler.get_scale():.0f}  skipped {skipped}")
