"""A nanoGPT-style character-level language model trained on a synthetic corpus generated from a
tiny template grammar ("the cat sat on the mat." ...). It follows nanoGPT's `train.py`: data encoded
to a uint16 numpy array, `get_batch(split)` sampling random windows, a GPT with causal
self-attention, dropout and weight tying between `wte` and `lm_head`, `configure_optimizers`
splitting parameters into decay (dim >= 2) and no-decay groups, a cosine learning-rate schedule
with warm-up written into the param groups each iteration, gradient accumulation, gradient
clipping, a bfloat16 autocast context on CPU, `estimate_loss()` under no_grad every
`eval_interval` iterations, and an in-memory checkpoint whenever the validation loss improves.
Fixed version: `estimate_loss()` calls `model.eval()` before evaluating and `model.train()` afterwards.
expect: -
"""
import math
import random
from contextlib import nullcontext

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
ptdtype = torch.bfloat16
ctx = nullcontext() if device == "mps" else torch.autocast(device_type=device_type, dtype=ptdtype)

# -----------------------------------------------------------------------------
batch_size = 12
block_size = 32
n_layer, n_head, n_embd, dropout = 2, 4, 48, 0.25
learning_rate, min_lr = 3e-3, 3e-4
max_iters, warmup_iters, lr_decay_iters = 80, 8, 80
eval_interval, eval_iters = 40, 6
gradient_accumulation_steps = 2
grad_clip = 1.0
weight_decay = 0.1
seed = 1337
# -----------------------------------------------------------------------------
random.seed(seed)
np.random.seed(seed)
torch.manual_seed(seed)


def build_corpus(n_sentences=3000):
    subjects = ["the cat", "a dog", "my friend", "the old man", "her brother", "a small bird"]
    verbs = ["sat on", "looked at", "ran past", "jumped over", "slept near", "talked to"]
    objects = ["the mat", "a tree", "the river", "an apple", "the red door", "a quiet house"]
    return " ".join(f"{random.choice(subjects)} {random.choice(verbs)} {random.choice(objects)}."
                    for _ in range(n_sentences))


text = build_corpus()
chars = sorted(set(text))
vocab_size = len(chars)
stoi = {ch: i for i, ch in enumerate(chars)}
data = np.array([stoi[c] for c in text], dtype=np.uint16)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split):
    d = train_data if split == "train" else val_data
    ix = torch.randint(len(d) - block_size, (batch_size,))
    x = torch.stack([torch.from_numpy(d[i:i + block_size].astype(np.int64)) for i in ix])
    y = torch.stack([torch.from_numpy(d[i + 1:i + 1 + block_size].astype(np.int64)) for i in ix])
    return x.to(device), y.to(device)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(n_embd, dim=2)
        k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
        q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
        v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd), nn.Dropout(dropout))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab_size, n_embd),
            wpe=nn.Embedding(block_size, n_embd),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([Block() for _ in range(n_layer)]),
            ln_f=nn.LayerNorm(n_embd),
        ))
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # weight tying
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas)


model = GPT().to(device)
optimizer = model.configure_optimizers(weight_decay, learning_rate, (0.9, 0.95))


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            with ctx:
                logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return min_lr + coeff * (learning_rate - min_lr)


X, Y = get_batch("train")
best_val_loss = 1e9
checkpoint = None
iter_num = 0
while True:
    lr = get_lr(iter_num)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr

    if iter_num % eval_interval == 0 or iter_num == max_iters:
        losses = estimate_loss()
        print(f"step {iter_num}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
        if losses["val"] < best_val_loss:
            best_val_loss = losses["val"]
            checkpoint = {
                "model": {k: v.detach().clone() for k, v in model.state_dict().items()},
                "optimizer": optimizer.state_dict(),
                "iter_num": iter_num,
                "best_val_loss": best_val_loss,
            }
    if iter_num == max_iters:
        break

    for micro_step in range(gradient_accumulation_steps):
        with ctx:
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
        X, Y = get_batch("train")
        loss.backward()
    if grad_clip != 0.0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)

    if iter_num % 25 == 0:
        print(f"iter {iter_num}: loss {loss.item() * gradient_accumulation_steps:.4f}, lr {lr:.2e}")
    iter_num += 1

model.eval()
with torch.no_grad():
    Xv, Yv = get_batch("val")
    _, clean_val = model(Xv, Yv)
print(f"best val {best_val_loss:.4f} at iter {checkpoint['iter_num']}; val loss in eval mode now {clean_val.item():.4f}")
