"""A tiny causal transformer language model with its attention mask built once, as a buffer.

expect: -
"""

import torch
import torch.nn.functional as F
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(9)
VOCAB, T, D = 32, 32, 64


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.pos = nn.Parameter(torch.zeros(T, D))
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.ff = nn.Sequential(nn.LayerNorm(D), nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))
        self.head = nn.Linear(D, VOCAB)
        self.register_buffer("mask", torch.triu(torch.ones(T, T), diagonal=1).bool())

    def forward(self, idx):
        h = self.emb(idx) + self.pos[: idx.shape[1]]
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / D**0.5
        mask = self.mask[: idx.shape[1], : idx.shape[1]]
        h = h + self.out(scores.masked_fill(mask, float("-inf")).softmax(-1) @ v)
        return self.head(h + self.ff(h))


text = torch.randint(0, VOCAB, (20000,))
model = TinyLM().to(device)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for _ in range(150):
    starts = torch.randint(0, len(text) - T - 1, (16,))
    batch = torch.stack([text[s : s + T + 1] for s in starts.tolist()]).to(device)
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
