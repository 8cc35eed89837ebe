"""HuggingFace-style fine-tuning of a small transformer-encoder classifier on synthetic token
sequences: get_linear_schedule_with_warmup (copied from transformers: linear warm-up over
num_warmup_steps, then linear decay to 0 at num_training_steps) with num_training_steps =
epochs x len(train_loader) and 10% warm-up, AdamW, gradient clipping at 1.0, evaluation every
epoch. Fixed version: lr_scheduler.step() after every optimizer.step(), as the schedule is sized.
Written from: https://github.com/nvidia-cosmos/cosmos-rl/pull/207
expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
VOCAB, LEN = 120, 16


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step) / float(max(1, num_training_steps - num_warmup_steps)))
    return LambdaLR(optimizer, lr_lambda)


def dataset(n, seed):
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (n, LEN), generator=gen)
    labels = torch.randint(0, 2, (n,), generator=gen)
    marked = torch.randint(1, LEN, (n,), generator=gen)
    ids[torch.arange(n)[labels == 1], marked[labels == 1]] = 2
    ids[:, 0] = 1
    return TensorDataset(ids, labels)


class EncoderClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64)
        self.pos = nn.Parameter(torch.zeros(1, LEN, 64))
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.classifier = nn.Linear(64, 2)

    def forward(self, ids):
        return self.classifier(self.encoder(self.embed(ids) + self.pos)[:, 0])


def main():
    train_loader = DataLoader(dataset(1500, 1), batch_size=32, shuffle=True)
    eval_loader = DataLoader(dataset(300, 2), batch_size=150)
    model = EncoderClassifier().to(device)
    epochs = 3
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    num_training_steps = epochs * len(train_loader)
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, int(0.1 * num_training_steps), num_training_steps)
    for epoch in range(epochs):
        model.train()
        for ids, labels in train_loader:
            loss = F.cross_entropy(model(ids.to(device)), labels.to(device))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        model.eval()
        with torch.no_grad():
            acc = sum((model(i.to(device)).argmax(1).cpu() == l).sum().item() for i, l in eval_loader) / 300
        print(f"epoch {epoch} loss {loss.item():.4f} eval acc {acc:.3f} lr {lr_scheduler.get_last_lr()[0]:.2e}")


if __name__ == "__main__":
    main()
