"""HuggingFace-accelerate style fine-tuning loop for text classification, written to run under
torchrun or alone: a tokenizer-like collate pads token ids and builds an attention mask, a
DistributedSampler (world size and rank from the environment, shuffle=True) feeds a DataLoader,
an embedding-bag encoder with a 2-layer head is trained with AdamW (no decay on biases and
norms) and a linear warm-up schedule stepped after every optimizer step; the mean loss and the
validation accuracy are logged every epoch. Bug: the loop never calls
train_sampler.set_epoch(epoch), so the sampler reshuffles with the same seed every epoch: all
five epochs see the same batches in the same order.
Written from: https://github.com/kan-bayashi/ParallelWaveGAN/issues/177
expect: same order
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
WORLD, RANK = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))
VOCAB, PAD, CLASSES = 300, 0, 4


class Reviews(Dataset):
    def __init__(self, n, seed):
        gen = torch.Generator().manual_seed(seed)
        self.labels = torch.randint(0, CLASSES, (n,), generator=gen)
        self.texts = []
        for label in self.labels.tolist():
            length = int(torch.randint(6, 30, (1,), generator=gen))
            ids = torch.randint(10, VOCAB, (length,), generator=gen)
            ids[torch.randint(0, length, (3,), generator=gen)] = 1 + 2 * label + torch.randint(0, 2, (3,), generator=gen)
            self.texts.append(ids)

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, i):
        return {"input_ids": self.texts[i], "label": self.labels[i]}


def collate(batch):
    longest = max(len(b["input_ids"]) for b in batch)
    ids = torch.full((len(batch), longest), PAD)
    for i, b in enumerate(batch):
        ids[i, : len(b["input_ids"])] = b["input_ids"]
    return {"input_ids": ids, "attention_mask": (ids != PAD).long(), "labels": torch.stack([b["label"] for b in batch])}


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64, padding_idx=PAD)
        self.norm = nn.LayerNorm(64)
        self.head = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, CLASSES))

    def forward(self, input_ids, attention_mask):
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (self.embed(input_ids) * mask).sum(1) / mask.sum(1)
        return self.head(self.norm(pooled))


def main():
    train, val = Reviews(1600, 1), Reviews(400, 2)
    train_sampler = DistributedSampler(train, num_replicas=WORLD, rank=RANK, shuffle=True, seed=42)
    train_loader = DataLoader(train, batch_size=32, sampler=train_sampler, collate_fn=collate)
    val_loader = DataLoader(val, batch_size=100, collate_fn=collate)
    model = Classifier().to(device)
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in n]
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "norm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
    epochs = 5
    total = epochs * len(train_loader)
    warmup = total // 10
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (total - s) / (total - warmup)))
    for epoch in range(epochs):
        model.train()
        running = 0.0
        for batch in train_loader:
            batch = {k: v.to(device) for k, v in batch.items()}
            logits = model(batch["input_ids"], batch["attention_mask"])
            loss = F.cross_entropy(logits, batch["labels"])
            loss.backward()
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            running += loss.detach()
        model.eval()
        correct = 0
        with torch.no_grad():
            for batch in val_loader:
                batch = {k: v.to(device) for k, v in batch.items()}
                correct += (model(batch["input_ids"], batch["attention_mask"]).argmax(-1) == batch["labels"]).sum().item()
        print(f"epoch {epoch} loss {running.item() / len(train_loader):.4f} val acc {correct / len(val):.3f}")


if __name__ == "__main__":
    main()
