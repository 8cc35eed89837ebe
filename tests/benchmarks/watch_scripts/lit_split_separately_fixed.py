"""Lightning-style tabular classifier: a LightningModule-like class with training_step,
validation_step and configure_optimizers (Adam with ReduceLROnPlateau on the validation loss), a
DataModule-like setup that splits a feature table and its label column into train and validation
parts, and a minimal Trainer loop that calls them as Lightning does, logging the epoch's mean
training loss and validation accuracy. Fixed version: one permutation splits the features and the labels together.
Written from: https://github.com/mlcommons/GaNDLF/pull/870
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def random_split_tensor(t, fraction, generator):
    order = torch.randperm(len(t), generator=generator)
    cut = int(fraction * len(t))
    return t[order[:cut]], t[order[cut:]]


class TableData:
    def setup(self):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(4000, 12, generator=gen)
        y = ((x[:, 0] > 0.3).long() + (x[:, 1] + x[:, 2] > 0).long() * 2)
        self.x_train, self.x_val = random_split_tensor(x, 0.8, torch.Generator().manual_seed(1))
        self.y_train, self.y_val = random_split_tensor(y, 0.8, torch.Generator().manual_seed(1))

    def train_dataloader(self):
        order = torch.randperm(len(self.x_train))
        return [(self.x_train[order[i: i + 128]], self.y_train[order[i: i + 128]]) for i in range(0, len(order), 128)]

    def val_dataloader(self):
        return [(self.x_val, self.y_val)]


class LitTable(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 96), nn.ReLU(), nn.Dropout(0.1), nn.Linear(96, 96), nn.ReLU(), nn.Linear(96, 4))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self.net(x)
        return F.cross_entropy(logits, y), (logits.argmax(1) == y).float().mean()

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=2e-3)
        return optimizer, torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)


def fit(module, data, epochs=6):
    data.setup()
    module.to(device)
    optimizer, plateau = module.configure_optimizers()
    for epoch in range(epochs):
        module.train()
        losses = []
        for batch_idx, (x, y) in enumerate(data.train_dataloader()):
            loss = module.training_step((x.to(device), y.to(device)), batch_idx)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
        module.eval()
        with torch.no_grad():
            val_loss, val_acc = module.validation_step([t.to(device) for t in data.val_dataloader()[0]], 0)
        plateau.step(val_loss)
        print(f"epoch {epoch} train_loss {torch.stack(losses).mean().item():.4f} val_acc {val_acc.item():.3f}")


if __name__ == "__main__":
    fit(LitTable(), TableData())
