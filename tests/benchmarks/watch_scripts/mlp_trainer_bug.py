"""A small, reusable Trainer class for tabular multi-class classification, used here on a
synthetic "wine quality"-like dataset (11 physico-chemical features, 3 quality bands).
The dataset is small, so each optimisation step uses the whole training set (full-batch
Adam). The model is an MLP with a classification head and an auxiliary
feature-reconstruction head (an auto-encoding regulariser used on every step, weighted 0.1);
the trainer clips gradients, reports the gradient norm, and reduces the learning rate on
a validation-loss plateau.
Bug: in train_step, optimizer.zero_grad() sits between loss.backward() (and the clipping,
which still reports a healthy gradient norm) and optimizer.step(), so every step runs on
cleared (None) gradients; Adam skips all parameters, the model never changes, and the
full-batch training loss is exactly constant.

expect: zero grad at step, flat loss
"""
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(99)
DEVICE = torch.device("cuda" if torch.cuda.is_available() else
                      "mps" if torch.backends.mps.is_available() else "cpu")


def make_wine_like(n, gen):
    x = torch.randn(n, 11, generator=gen)
    x[:, 0] = x[:, 0] * 0.8 + 0.3 * x[:, 1]          # correlated acidity columns
    score = 1.2 * x[:, 10] - 0.9 * x[:, 1] + 0.6 * x[:, 9] - 0.4 * x[:, 6] * x[:, 4] \
        + 0.3 * torch.randn(n, generator=gen)
    y = torch.bucketize(score, torch.tensor([-0.8, 0.8]))
    return x, y


@dataclass
class TrainConfig:
    epochs: int = 200
    lr: float = 3e-3
    weight_decay: float = 1e-4
    aux_weight: float = 0.1
    clip: float = 5.0
    log_every: int = 20


class WineNet(nn.Module):
    def __init__(self, d_in=11, hidden=64, n_classes=3):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(d_in, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU())
        self.cls_head = nn.Linear(hidden, n_classes)
        self.recon_head = nn.Linear(hidden, d_in)

    def forward(self, x):
        h = self.trunk(x)
        return self.cls_head(h), self.recon_head(h)


class Trainer:
    def __init__(self, model, cfg: TrainConfig, device=DEVICE):
        self.model = model.to(device)
        self.cfg = cfg
        self.device = device
        self.optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(self.optimizer, mode="min",
                                                                    factor=0.5, patience=10, min_lr=1e-5)
        self.history = {"train_loss": [], "val_loss": [], "val_acc": []}

    def compute_loss(self, x, y):
        logits, recon = self.model(x)
        cls_loss = F.cross_entropy(logits, y)
        recon_loss = F.mse_loss(recon, x)
        return cls_loss + self.cfg.aux_weight * recon_loss, cls_loss

    def train_step(self, x, y):
        self.model.train()
        loss, cls_loss = self.compute_loss(x, y)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.clip)
        self.optimizer.zero_grad()
        self.optimizer.step()
        return cls_loss.detach(), grad_norm

    @torch.no_grad()
    def evaluate(self, x, y):
        self.model.eval()
        logits, _ = self.model(x)
        return F.cross_entropy(logits, y), (logits.argmax(1) == y).float().mean()

    def fit(self, train, val):
        x_tr, y_tr = (t.to(self.device) for t in train)
        x_va, y_va = (t.to(self.device) for t in val)
        for epoch in range(1, self.cfg.epochs + 1):
            train_loss, grad_norm = self.train_step(x_tr, y_tr)
            val_loss, val_acc = self.evaluate(x_va, y_va)
            self.scheduler.step(val_loss)
            if epoch % self.cfg.log_every == 0 or epoch == 1:
                tl, gn, vl, va = torch.stack([train_loss, grad_norm, val_loss, val_acc]).tolist()
                self.history["train_loss"].append(tl)
                self.history["val_loss"].append(vl)
                self.history["val_acc"].append(va)
                print(f"epoch {epoch:3d}  train_ce {tl:.5f}  |grad| {gn:.3f}  "
                      f"val_ce {vl:.5f}  val_acc {va:.3f}  lr {self.optimizer.param_groups[0]['lr']:.1e}")
        return self.history


gen = torch.Generator().manual_seed(5)
x, y = make_wine_like(900, gen)
train_set, val_set = (x[:700], y[:700]), (x[700:], y[700:])
trainer = Trainer(WineNet(), TrainConfig())
hist = trainer.fit(train_set, val_set)
print(f"final val accuracy {hist['val_acc'][-1]:.3f}")
