"""Lightning-style manual optimization with gradient accumulation: a LightningModule-like
regressor (automatic_optimization = False) for a multi-output tabular target, whose
training_step calls manual_backward on the loss divided by the accumulation factor and steps the
optimizer every 4 batches, with a hook on_train_epoch_start; a minimal Trainer loop calls the
hooks as Lightning does. SGD with momentum, validation MSE per epoch. Bug: opt.zero_grad() sits in
on_train_epoch_start instead of after each accumulated opt.step(), so gradients keep summing
over the whole epoch: each step applies the sum of every earlier micro-batch's gradient.
Written from: https://github.com/IDEA-Research/DAB-DETR/issues/58
expect: missing zero_grad
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
ACCUMULATE = 4


class LitRegressor(nn.Module):
    automatic_optimization = False

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 64), nn.SiLU(), nn.Linear(64, 64), nn.SiLU(), nn.Linear(64, 3))
        self.optimizer = None

    def configure_optimizers(self):
        self.optimizer = torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        return self.optimizer

    def manual_backward(self, loss):
        loss.backward()

    def on_train_epoch_start(self):
        self.optimizer.zero_grad()

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.manual_backward(loss / ACCUMULATE)
        if (batch_idx + 1) % ACCUMULATE == 0:
            self.optimizer.step()
        return loss.detach()


def fit(module, epochs=4):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(2560, 10, generator=gen)
    w = torch.randn(10, 3, generator=gen)
    y = torch.tanh(x @ w) + 0.05 * torch.randn(2560, 3, generator=gen)
    xv, yv = x[2048:], y[2048:]
    x, y = x[:2048], y[:2048]
    module.to(device)
    module.configure_optimizers()
    for epoch in range(epochs):
        module.train()
        module.on_train_epoch_start()
        order = torch.randperm(len(x))
        losses = [module.training_step((x[order[i: i + 32]].to(device), y[order[i: i + 32]].to(device)), i // 32)
                  for i in range(0, len(x), 32)]
        module.eval()
        with torch.no_grad():
            val = F.mse_loss(module.net(xv.to(device)), yv.to(device)).item()
        print(f"epoch {epoch} train mse {torch.stack(losses).mean().item():.4f} val mse {val:.4f}")


if __name__ == "__main__":
    fit(LitRegressor())
