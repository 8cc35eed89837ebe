"""A fastai-v2-flavoured `Learner` with a callback loop (`before_fit`, `before_batch`,
`after_pred`, `after_loss`, `before_step`, `after_step`, `after_epoch`, cancel exceptions) used
for a multi-task tabular problem: predict a customer's churn class (3 classes) from categorical
embeddings + continuous features, and, where it was recorded, a continuous "spend" value that is
known for only ~6% of the rows. Callbacks handle train/eval switching, a one-cycle schedule
stepped per batch (correct for one-cycle), gradient clipping, a recorder with smoothed loss, and
early stopping on validation loss that saves the best weights in memory. The loss averages the
regression term over the rows whose spend is known. Bug: that masked mean divides by the count
of known rows without guarding against a batch that has none, so 0/0 yields NaN, which
propagates into the gradients and the weights.
expect: non-finite
"""
import copy
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(3)
np.random.seed(3)


class CancelBatchException(Exception):
    pass


class CancelFitException(Exception):
    pass


class Callback:
    order = 0
    learn = None

    def __call__(self, event_name):
        fn = getattr(self, event_name, None)
        if fn is not None:
            fn()


class TrainEvalCallback(Callback):
    order = -10

    def before_fit(self):
        self.learn.train_iter = 0
        self.learn.pct_train = 0.0

    def before_train(self):
        self.learn.model.train()
        self.learn.training = True

    def before_validate(self):
        self.learn.model.eval()
        self.learn.training = False

    def after_batch(self):
        if self.learn.training:
            self.learn.train_iter += 1
            self.learn.pct_train = self.learn.train_iter / self.learn.total_iters


class OneCycleSchedule(Callback):
    order = 5

    def __init__(self, lr_max, pct_start=0.25, div=25.0, div_final=1e4):
        self.lr_max, self.pct_start, self.div, self.div_final = lr_max, pct_start, div, div_final

    @staticmethod
    def _cos(start, end, pos):
        return end + (start - end) / 2 * (1 + math.cos(math.pi * pos))

    def before_batch(self):
        if not self.learn.training:
            return
        p = self.learn.pct_train
        if p < self.pct_start:
            lr = self._cos(self.lr_max / self.div, self.lr_max, p / self.pct_start)
        else:
            lr = self._cos(self.lr_max, self.lr_max / self.div_final, (p - self.pct_start) / (1 - self.pct_start))
        for g in self.learn.opt.param_groups:
            g["lr"] = lr


class GradientClip(Callback):
    def __init__(self, max_norm=1.0):
        self.max_norm = max_norm

    def before_step(self):
        nn.utils.clip_grad_norm_(self.learn.model.parameters(), self.max_norm)


class Recorder(Callback):
    order = 50

    def __init__(self, beta=0.98):
        self.beta = beta

    def before_fit(self):
        self.losses, self.val_losses, self.lrs = [], [], []
        self.smooth, self.count = 0.0, 0

    def after_batch(self):
        if self.learn.training:
            self.count += 1
            self.smooth = self.beta * self.smooth + (1 - self.beta) * self.learn.loss.item()
            self.losses.append(self.smooth / (1 - self.beta ** self.count))
            self.lrs.append(self.learn.opt.param_groups[0]["lr"])
        else:
            self.val_sum += self.learn.loss.item() * self.learn.yb[0].shape[0]
            self.val_n += self.learn.yb[0].shape[0]

    def before_validate(self):
        self.val_sum, self.val_n = 0.0, 0

    def after_validate(self):
        self.val_losses.append(self.val_sum / max(self.val_n, 1))

    def after_epoch(self):
        print(f"epoch {self.learn.epoch}: train {self.losses[-1]:.4f} valid {self.val_losses[-1]:.4f} "
              f"lr {self.lrs[-1]:.2e}")


class SaveBestEarlyStop(Callback):
    order = 60

    def __init__(self, patience=3):
        self.patience = patience

    def before_fit(self):
        self.best, self.wait, self.best_state = math.inf, 0, None

    def after_epoch(self):
        val = self.learn.recorder.val_losses[-1]
        if val < self.best:
            self.best, self.wait = val, 0
            self.best_state = copy.deepcopy(self.learn.model.state_dict())
        else:
            self.wait += 1
            if self.wait >= self.patience:
                raise CancelFitException()


class Learner:
    def __init__(self, dls, model, loss_func, lr=1e-2, cbs=()):
        self.train_dl, self.valid_dl = dls
        self.model, self.loss_func, self.lr = model.to(device), loss_func, lr
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=1e-2)
        self.cbs = sorted([TrainEvalCallback(), *cbs], key=lambda c: c.order)
        for cb in self.cbs:
            cb.learn = self
            setattr(self, type(cb).__name__.lower(), cb)

    def __call__(self, event):
        for cb in self.cbs:
            cb(event)

    def one_batch(self, xb, yb):
        self.xb = [t.to(device) for t in xb]
        self.yb = [t.to(device) for t in yb]
        try:
            self("before_batch")
            self.pred = self.model(*self.xb)
            self("after_pred")
            self.loss = self.loss_func(self.pred, *self.yb)
            self("after_loss")
            if self.training:
                self.loss.backward()
                self("before_step")
                self.opt.step()
                self("after_step")
                self.opt.zero_grad()
        except CancelBatchException:
            pass
        self("after_batch")

    def all_batches(self, dl):
        for xb_cat, xb_cont, y_cls, y_reg, has_reg in dl:
            self.one_batch((xb_cat, xb_cont), (y_cls, y_reg, has_reg))

    def fit(self, n_epoch):
        self.n_epoch = n_epoch
        self.total_iters = n_epoch * len(self.train_dl)
        try:
            self("before_fit")
            for self.epoch in range(n_epoch):
                self("before_train")
                self.all_batches(self.train_dl)
                self("after_train")
                self("before_validate")
                with torch.no_grad():
                    self.all_batches(self.valid_dl)
                self("after_validate")
                self("after_epoch")
        except CancelFitException:
            print("early stop")
        self("after_fit")


class ChurnTable(Dataset):
    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.cat = np.stack([rng.integers(0, 7, n), rng.integers(0, 4, n)], axis=1).astype(np.int64)
        self.cont = rng.normal(size=(n, 6)).astype(np.float32)
        score = self.cont[:, 0] - 0.8 * self.cont[:, 1] + 0.5 * (self.cat[:, 0] % 3) - 0.5
        self.y_cls = np.digitize(score, [-0.5, 0.8]).astype(np.int64)
        self.y_reg = (2.0 + self.cont[:, 2] + 0.3 * self.cat[:, 1]).astype(np.float32)
        self.has_reg = (rng.random(n) < 0.06).astype(np.float32)

    def __len__(self):
        return len(self.y_cls)

    def __getitem__(self, i):
        return self.cat[i], self.cont[i], self.y_cls[i], self.y_reg[i], self.has_reg[i]


class TabularModel(nn.Module):
    def __init__(self, emb_szs, n_cont, n_out=3, hidden=(64, 32), ps=0.1):
        super().__init__()
        self.embeds = nn.ModuleList([nn.Embedding(ni, nf) for ni, nf in emb_szs])
        self.emb_drop = nn.Dropout(ps)
        self.bn_cont = nn.BatchNorm1d(n_cont)
        n_in = sum(nf for _, nf in emb_szs) + n_cont
        layers = []
        for h in hidden:
            layers += [nn.Linear(n_in, h), nn.ReLU(), nn.BatchNorm1d(h), nn.Dropout(ps)]
            n_in = h
        self.layers = nn.Sequential(*layers)
        self.cls_head = nn.Linear(n_in, n_out)
        self.reg_head = nn.Linear(n_in, 1)

    def forward(self, x_cat, x_cont):
        x = torch.cat([e(x_cat[:, i]) for i, e in enumerate(self.embeds)], 1)
        x = torch.cat([self.emb_drop(x), self.bn_cont(x_cont)], 1)
        h = self.layers(x)
        return self.cls_head(h), self.reg_head(h).squeeze(-1)


def multitask_loss(pred, y_cls, y_reg, has_reg):
    logits, reg = pred
    ce = F.cross_entropy(logits, y_cls)
    sq_err = (reg - y_reg) ** 2 * has_reg
    reg_loss = sq_err.sum() / has_reg.sum()
    return ce + 0.5 * reg_loss


if __name__ == "__main__":
    train_dl = DataLoader(ChurnTable(2048, seed=0), batch_size=16, shuffle=True, drop_last=True)
    valid_dl = DataLoader(ChurnTable(512, seed=1), batch_size=256)
    model = TabularModel(emb_szs=[(7, 4), (4, 3)], n_cont=6)
    learn = Learner((train_dl, valid_dl), model, multitask_loss, lr=5e-3,
                    cbs=[OneCycleSchedule(lr_max=5e-3), GradientClip(1.0), Recorder(), SaveBestEarlyStop(patience=3)])
    learn.fit(3)
    n_bad = sum((~torch.isfinite(p)).sum().item() for p in model.parameters())
    print(f"best valid {learn.savebestearlystop.best:.4f}; non-finite weights {n_bad}")
