"""Binary event detection on synthetic multichannel sensor windows (think vibration
monitoring: 3 channels x 64 samples, positives contain a short damped burst at a random
position; ~20% positives). A small 1-D CNN with global pooling is trained with
BCE-with-logits using a class-balancing pos_weight, OneCycleLR stepped every batch,
bfloat16 autocast on CPU, and the usual training-loop metrics (running loss, accuracy,
precision, recall) computed every step.
Bug: the per-step metrics are computed on the host: loss.item(), labels.cpu().numpy() and
probabilities .detach().cpu().numpy() every batch (several device->host reads per step,
each a synchronisation on an accelerator), although they are only printed every 50 steps.

expect: host sync
"""
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
use_amp = device in ("cpu", "cuda")


def synth_windows(n, length=64, pos_rate=0.2, gen=None):
    t = torch.arange(length, dtype=torch.float32)
    x = 0.5 * torch.randn(n, 3, length, generator=gen)
    x += 0.3 * torch.sin(2 * torch.pi * t / 16 + torch.rand(n, 1, 1, generator=gen) * 6.28)
    y = (torch.rand(n, generator=gen) < pos_rate).float()
    onset = torch.randint(4, length - 20, (n,), generator=gen)
    rel = t.unsqueeze(0) - onset.unsqueeze(1).float()
    burst = torch.where(rel >= 0, torch.exp(-rel.clamp(min=0) / 4.0) * torch.sin(1.7 * rel), torch.zeros_like(rel))
    gains = torch.tensor([1.0, 0.6, 0.3]).view(1, 3, 1)
    x += y.view(n, 1, 1) * 2.0 * burst.unsqueeze(1) * gains
    return x, y


gen = torch.Generator().manual_seed(11)
x_train, y_train = synth_windows(6000, gen=gen)
x_val, y_val = synth_windows(1000, gen=gen)
x_train, y_train, x_val, y_val = (t.to(device) for t in (x_train, y_train, x_val, y_val))


class EventNet(nn.Module):
    def __init__(self, c_in=3, width=24):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv1d(c_in, width, 7, padding=3), nn.GELU(),
            nn.Conv1d(width, width, 5, padding=2, dilation=1), nn.GELU(),
            nn.Conv1d(width, width, 5, padding=4, dilation=2), nn.GELU(),
        )
        self.classifier = nn.Linear(2 * width, 1)

    def forward(self, x):
        h = self.body(x)
        pooled = torch.cat([h.mean(-1), h.amax(-1)], dim=1)
        return self.classifier(pooled).squeeze(-1)


model = EventNet().to(device)
BATCH, EPOCHS, LOG_EVERY = 64, 3, 50
steps_per_epoch = x_train.size(0) // BATCH
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=5e-3, epochs=EPOCHS,
                                                steps_per_epoch=steps_per_epoch, pct_start=0.25)
pos_weight = ((1 - y_train.mean()) / y_train.mean()).to(device)

step = 0
t0 = time.time()
for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(x_train.size(0), device=device)
    stats = np.zeros(5)      # loss_sum, tp, fp, fn, correct
    seen = 0
    for b in range(steps_per_epoch):
        idx = perm[b * BATCH:(b + 1) * BATCH]
        xb, yb = x_train[idx], y_train[idx]
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=use_amp):
            logits = model(xb)
        loss = F.binary_cross_entropy_with_logits(logits.float(), yb, pos_weight=pos_weight)

        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        step += 1

        probs = torch.sigmoid(logits.float()).detach().cpu().numpy()
        labels = yb.cpu().numpy()
        pred = (probs > 0.5).astype(np.float32)
        stats += np.array([
            loss.item() * labels.size,
            (pred * labels).sum(),
            (pred * (1 - labels)).sum(),
            ((1 - pred) * labels).sum(),
            (pred == labels).sum(),
        ])
        seen += labels.size

        if step % LOG_EVERY == 0:
            loss_sum, tp, fp, fn, correct = stats
            precision = tp / max(tp + fp, 1.0)
            recall = tp / max(tp + fn, 1.0)
            print(f"ep {epoch} step {step:4d} | loss {loss_sum / seen:.4f} acc {correct / seen:.3f} "
                  f"prec {precision:.3f} rec {recall:.3f} | lr {scheduler.get_last_lr()[0]:.2e}")

    model.eval()
    with torch.no_grad():
        v_logits = model(x_val)
        v_pred = (v_logits > 0).float()
        tp = (v_pred * y_val).sum()
        fp = (v_pred * (1 - y_val)).sum()
        fn = ((1 - v_pred) * y_val).sum()
        v_acc = (v_pred == y_val).float().mean()
        summary = torch.stack([v_acc, tp / (tp + fp).clamp(min=1), tp / (tp + fn).clamp(min=1)]).tolist()
    print(f"== epoch {epoch} val acc {summary[0]:.3f} precision {summary[1]:.3f} recall {summary[2]:.3f}")

print(f"train time {time.time() - t0:.2f}s for {step} steps")
