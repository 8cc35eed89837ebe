"""Tiny GRU character language model with linear warm-up + cosine decay.

A synthetic corpus is generated from a small stochastic grammar (nested
brackets, repeated keywords, digits) and cut into fixed-length windows served
by a DataLoader. A 1-layer GRU LM with tied input/output embeddings is trained
with AdamW, gradient clipping and a cosine learning-rate schedule. Bug: the
schedule is CosineAnnealingLR(T_max=num_epochs), written for per-epoch
stepping, but scheduler.step() is called after every batch, so the lr reaches
zero after 5 batches and then keeps cycling between 0 and the peak every 10
batches instead of decaying once over the whole run. (The reference version
uses warm-up + cosine via LambdaLR over the total number of batches.)
Validation perplexity is reported per epoch.

expect: lr collapse
"""
import math
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

random.seed(0)
torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

VOCAB = list("()[]{}0123456789 abcdefghij;=\n")
STOI = {c: i for i, c in enumerate(VOCAB)}


def gen_statement(depth=0):
    r = random.random()
    if depth < 3 and r < 0.35:
        o, c = random.choice(["()", "[]", "{}"])
        return o + " ".join(gen_statement(depth + 1) for _ in range(random.randint(1, 3))) + c
    if r < 0.7:
        name = random.choice(["abc", "def", "ghij", "fig", "jab"])
        return f"{name}={random.randint(0, 99)};"
    return str(random.randint(0, 999))


def build_corpus(n_chars):
    out = []
    total = 0
    while total < n_chars:
        s = gen_statement() + "\n"
        out.append(s)
        total += len(s)
    return torch.tensor([STOI[c] for c in "".join(out)[:n_chars]], dtype=torch.long)


def windows(ids, seq_len):
    n = (len(ids) - 1) // seq_len
    x = ids[: n * seq_len].view(n, seq_len)
    y = ids[1: n * seq_len + 1].view(n, seq_len)
    return TensorDataset(x, y)


class CharGRU(nn.Module):
    def __init__(self, vocab, dim=48):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.emb.weight  # weight tying

    def forward(self, x):
        h, _ = self.rnn(self.drop(self.emb(x)))
        return self.head(self.drop(h))


def warmup_cosine(total_steps, warmup_steps, floor=0.1):
    def f(step):
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        t = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(t, 1.0)))
    return f


def main():
    seq_len, batch_size, num_epochs, peak_lr = 24, 32, 5, 1e-2
    corpus = build_corpus(30_000)
    split = int(0.9 * len(corpus))
    train_ds, val_ds = windows(corpus[:split], seq_len), windows(corpus[split:], seq_len)
    train_dl = DataLoader(train_ds, batch_size=batch_size, shuffle=True, drop_last=True,
                          generator=torch.Generator().manual_seed(0))
    val_dl = DataLoader(val_ds, batch_size=128)

    model = CharGRU(len(VOCAB)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=peak_lr, betas=(0.9, 0.98), weight_decay=0.01)
    total_steps = num_epochs * len(train_dl)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=num_epochs)
    criterion = nn.CrossEntropyLoss()

    step = 0
    for epoch in range(num_epochs):
        model.train()
        for x, y in train_dl:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            loss = criterion(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            step += 1
            if step % 25 == 0:
                print(f"step {step:4d}  lr {scheduler.get_last_lr()[0]:.2e}  loss {loss.item():.3f}")

        model.eval()
        tot, n = 0.0, 0
        with torch.no_grad():
            for x, y in val_dl:
                x, y = x.to(device), y.to(device)
                logits = model(x)
                tot += nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
                n += y.numel()
        print(f"epoch {epoch}: val ppl {math.exp(tot / n):.3f}")


if __name__ == "__main__":
    main()
