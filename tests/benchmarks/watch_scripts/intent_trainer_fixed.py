"""Research-repo style intent classifier: an EmbeddingBag bag-of-tokens encoder with a small MLP
head, trained on synthetic token sequences by a reusable `Trainer` class driven by callbacks
(linear warm-up + exponential decay of the learning rate, an EMA copy of the weights, periodic
logging, early stopping on validation accuracy). The learning-rate schedule is implemented by hand
in a callback that writes param_group['lr']. Fixed version: the warm-up runs per batch and the
0.8 decay is applied once per epoch in on_epoch_end.
expect: -
"""
import copy
import random

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

VOCAB, N_CLASSES, SEQ_LEN = 500, 6, 16


def make_corpus(n, rng):
    """Each class owns a few 'keyword' tokens; a sentence is mostly noise plus 2 keywords."""
    keywords = rng.choice(VOCAB, size=(N_CLASSES, 8), replace=False)
    y = rng.integers(0, N_CLASSES, size=n)
    X = rng.integers(0, VOCAB, size=(n, SEQ_LEN))
    for i in range(n):
        pos = rng.choice(SEQ_LEN, size=2, replace=False)
        X[i, pos] = rng.choice(keywords[y[i]], size=2)
    return torch.from_numpy(X), torch.from_numpy(y)


class BagClassifier(nn.Module):
    def __init__(self, vocab, dim, n_classes):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Dropout(0.1), nn.Linear(dim, n_classes))

    def forward(self, tokens):
        return self.mlp(self.embed(tokens))


class Callback:
    def on_train_begin(self, trainer): pass
    def on_batch_end(self, trainer): pass
    def on_epoch_end(self, trainer): pass


class WarmupExpDecay(Callback):
    def __init__(self, base_lr, warmup_steps, decay):
        self.base_lr, self.warmup_steps, self.decay = base_lr, warmup_steps, decay
        self.step = 0

    def on_train_begin(self, trainer):
        for g in trainer.optimizer.param_groups:
            g["lr"] = self.base_lr / self.warmup_steps

    def on_batch_end(self, trainer):
        self.step += 1
        for g in trainer.optimizer.param_groups:
            if self.step <= self.warmup_steps:
                g["lr"] = self.base_lr * self.step / self.warmup_steps

    def on_epoch_end(self, trainer):
        if self.step > self.warmup_steps:
            for g in trainer.optimizer.param_groups:
                g["lr"] *= self.decay


class EMACallback(Callback):
    def __init__(self, decay=0.99):
        self.decay = decay

    def on_train_begin(self, trainer):
        trainer.ema_model = copy.deepcopy(trainer.model).eval()
        for p in trainer.ema_model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def on_batch_end(self, trainer):
        for pe, p in zip(trainer.ema_model.parameters(), trainer.model.parameters()):
            pe.mul_(self.decay).add_(p.detach(), alpha=1 - self.decay)


class PrintLogger(Callback):
    def __init__(self, every=30):
        self.every = every

    def on_batch_end(self, trainer):
        if trainer.global_step % self.every == 0:
            lr = trainer.optimizer.param_groups[0]["lr"]
            print(f"  step {trainer.global_step:4d} loss {trainer.last_loss.item():.4f} lr {lr:.2e}")

    def on_epoch_end(self, trainer):
        print(f"epoch {trainer.epoch} val_acc {trainer.metrics['val_acc']:.3f} "
              f"ema_acc {trainer.metrics['ema_acc']:.3f}")


class EarlyStopping(Callback):
    def __init__(self, patience=2):
        self.patience, self.best, self.bad = patience, -1.0, 0

    def on_epoch_end(self, trainer):
        if trainer.metrics["val_acc"] > self.best:
            self.best, self.bad = trainer.metrics["val_acc"], 0
        else:
            self.bad += 1
            trainer.should_stop = self.bad >= self.patience


class Trainer:
    def __init__(self, model, optimizer, train_data, val_data, batch_size, callbacks):
        self.model, self.optimizer = model, optimizer
        self.train_data, self.val_data = train_data, val_data
        self.batch_size, self.callbacks = batch_size, callbacks
        self.global_step, self.epoch, self.should_stop = 0, 0, False
        self.metrics = {}

    def _emit(self, event):
        for cb in self.callbacks:
            getattr(cb, event)(self)

    def _batches(self):
        X, y = self.train_data
        perm = torch.randperm(len(y))
        for i in range(0, len(y) - self.batch_size + 1, self.batch_size):
            idx = perm[i:i + self.batch_size]
            yield X[idx].to(device), y[idx].to(device)

    @torch.no_grad()
    def _accuracy(self, model):
        X, y = self.val_data
        logits = model(X.to(device))
        return (logits.argmax(-1) == y.to(device)).float().mean().item()

    def fit(self, epochs):
        self._emit("on_train_begin")
        for self.epoch in range(epochs):
            self.model.train()
            for xb, yb in self._batches():
                loss = F.cross_entropy(self.model(xb), yb, label_smoothing=0.05)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.global_step += 1
                self.last_loss = loss.detach()
                self._emit("on_batch_end")
            self.model.eval()
            self.metrics["val_acc"] = self._accuracy(self.model)
            self.metrics["ema_acc"] = self._accuracy(self.ema_model)
            self._emit("on_epoch_end")
            if self.should_stop:
                print("early stop")
                break
        return self.metrics


def main():
    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X, y = make_corpus(2400, rng)
    train, val = (X[:2000], y[:2000]), (X[2000:], y[2000:])

    model = BagClassifier(VOCAB, 32, N_CLASSES).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    callbacks = [WarmupExpDecay(base_lr=1e-2, warmup_steps=20, decay=0.8),
                 EMACallback(0.98), PrintLogger(30), EarlyStopping(patience=2)]
    trainer = Trainer(model, optimizer, train, val, batch_size=50, callbacks=callbacks)
    metrics = trainer.fit(epochs=5)
    print(f"final lr {optimizer.param_groups[0]['lr']:.3e} val_acc {metrics['val_acc']:.3f}")


if __name__ == "__main__":
    main()
