"""A Lightning-flavoured regression project without Lightning: a `LitForecaster` module that
defines `training_step`, `validation_step`, `configure_optimizers` and `on_validation_epoch_end`,
driven by a small hand-written `MiniTrainer` that mimics the Lightning contract (it calls
`self.log`, honours `gradient_clip_val`, runs validation in eval mode under no_grad, does early
stopping on `val_loss`, and keeps the best checkpoint in memory). The task is forecasting the next
value of noisy multi-frequency sine windows with a small MLP (BatchNorm + dropout) that also has
an auxiliary "trend" head used every step. `configure_optimizers` returns Adam plus an
ExponentialLR scheduler declared with `interval: "epoch"`. Bug: the trainer steps every scheduler
after each batch, ignoring the declared interval, so the learning rate decays per batch and is
gone after a couple of epochs.
expect: lr collapse
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


class SineWindows(Dataset):
    def __init__(self, n, window=24, seed=0):
        rng = np.random.default_rng(seed)
        t = np.arange(window + 1, dtype=np.float32)
        freqs = rng.uniform(0.1, 0.6, size=(n, 2)).astype(np.float32)
        phase = rng.uniform(0, 2 * np.pi, size=(n, 2)).astype(np.float32)
        slope = rng.normal(0, 0.02, size=(n, 1)).astype(np.float32)
        series = (np.sin(freqs[:, :1] * t + phase[:, :1]) + 0.5 * np.sin(freqs[:, 1:] * t + phase[:, 1:])
                  + slope * t + rng.normal(0, 0.05, size=(n, window + 1)).astype(np.float32))
        self.x = series[:, :-1]
        self.y = series[:, -1:]
        self.trend = slope * window

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i], self.trend[i]


class LitForecaster(nn.Module):
    def __init__(self, window=24, hidden=64, lr=3e-3, gamma=0.8):
        super().__init__()
        self.hparams = {"window": window, "hidden": hidden, "lr": lr, "gamma": gamma}
        self.backbone = nn.Sequential(
            nn.Linear(window, hidden), nn.BatchNorm1d(hidden), nn.GELU(), nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.GELU(),
        )
        self.head = nn.Linear(hidden, 1)
        self.trend_head = nn.Linear(hidden, 1)
        self.logged = {}
        self.trainer = None

    def log(self, name, value, prog_bar=False):
        self.logged[name] = value.detach() if torch.is_tensor(value) else value

    def forward(self, x):
        h = self.backbone(x)
        return self.head(h), self.trend_head(h)

    def training_step(self, batch, batch_idx):
        x, y, trend = batch
        pred, trend_pred = self(x)
        loss = F.mse_loss(pred, y)
        aux = F.mse_loss(trend_pred, trend)
        self.log("train_loss", loss, prog_bar=True)
        return loss + 0.1 * aux

    def validation_step(self, batch, batch_idx):
        x, y, _ = batch
        pred, _ = self(x)
        loss = F.mse_loss(pred, y, reduction="sum")
        return {"sse": loss, "n": y.shape[0]}

    def on_validation_epoch_end(self, outputs):
        sse = torch.stack([o["sse"] for o in outputs]).sum()
        n = sum(o["n"] for o in outputs)
        self.log("val_loss", sse / n)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams["lr"])
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=self.hparams["gamma"])
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "epoch", "frequency": 1}}


class MiniTrainer:
    def __init__(self, max_epochs=10, gradient_clip_val=1.0, patience=4, log_every_n_steps=20):
        self.max_epochs = max_epochs
        self.gradient_clip_val = gradient_clip_val
        self.patience = patience
        self.log_every_n_steps = log_every_n_steps
        self.global_step = 0
        self.best_score = math.inf
        self.best_checkpoint = None

    def _to_device(self, batch):
        return [b.to(device) for b in batch]

    def fit(self, module, train_dataloaders, val_dataloaders):
        module.trainer = self
        module.to(device)
        conf = module.configure_optimizers()
        optimizer = conf["optimizer"]
        sched_cfg = conf["lr_scheduler"]
        scheduler = sched_cfg["scheduler"]
        bad_epochs = 0
        for epoch in range(self.max_epochs):
            module.train()
            for batch_idx, batch in enumerate(train_dataloaders):
                batch = self._to_device(batch)
                loss = module.training_step(batch, batch_idx)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if self.gradient_clip_val:
                    torch.nn.utils.clip_grad_norm_(module.parameters(), self.gradient_clip_val)
                optimizer.step()
                scheduler.step()
                self.global_step += 1
                if self.global_step % self.log_every_n_steps == 0:
                    print(f"step {self.global_step} train_loss {module.logged['train_loss'].item():.4f} "
                          f"lr {optimizer.param_groups[0]['lr']:.2e}")

            module.eval()
            outputs = []
            with torch.no_grad():
                for batch_idx, batch in enumerate(val_dataloaders):
                    outputs.append(module.validation_step(self._to_device(batch), batch_idx))
            module.on_validation_epoch_end(outputs)
            val_loss = module.logged["val_loss"].item()
            print(f"epoch {epoch} val_loss {val_loss:.4f}")

            if val_loss < self.best_score - 1e-4:
                self.best_score = val_loss
                self.best_checkpoint = {"epoch": epoch, "global_step": self.global_step,
                                        "state_dict": copy.deepcopy(module.state_dict()),
                                        "optimizer_states": [copy.deepcopy(optimizer.state_dict())]}
                bad_epochs = 0
            else:
                bad_epochs += 1
                if bad_epochs >= self.patience:
                    print(f"early stopping at epoch {epoch}")
                    break
        print(f"best val_loss {self.best_score:.4f} at epoch {self.best_checkpoint['epoch']}")


if __name__ == "__main__":
    torch.manual_seed(7)
    train_loader = DataLoader(SineWindows(1536, seed=0), batch_size=64, shuffle=True, drop_last=True)
    val_loader = DataLoader(SineWindows(512, seed=1), batch_size=256)
    model = LitForecaster()
    trainer = MiniTrainer(max_epochs=12, gradient_clip_val=1.0)
    trainer.fit(model, train_loader, val_loader)
