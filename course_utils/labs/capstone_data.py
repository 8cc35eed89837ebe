"""Lesson 08's capstone task: its data (token ids -> one of four tags) and its model, shared by the
lab (``capstone``), its checkpoints (``capstone_checks``) and its rules (``capstone_rules``)."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, LENGTH, CLASSES = 64, 12, 4
POOL, SIGNALS = 4, 2  # each tag owns POOL signal tokens; a sequence holds SIGNALS of its tag's

def tagged_sequences(n: int, seed: int, sort: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` sequences of LENGTH token ids and their tags: SIGNALS tokens from the tag's own pool,
    the rest noise, in random positions. ``sort`` groups the rows by tag, as files often arrive."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % CLASSES
    if sort:
        labels = labels.sort().values
    ids = torch.randint(CLASSES * POOL, VOCAB, (n, LENGTH), generator=g)
    ids[:, :SIGNALS] = labels[:, None] * POOL + torch.randint(0, POOL, (n, SIGNALS), generator=g)
    order = torch.rand(n, LENGTH, generator=g).argsort(dim=1)
    return ids.gather(1, order), labels


class TagModel(nn.Module):
    """Token ids -> tag logits: mean of the token embeddings, a residual MLP block, a linear head."""

    def __init__(self, vocab: int = VOCAB, classes: int = CLASSES, dim: int = 16, hidden: int = 32,
                 max_norm: float | None = None):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim, max_norm=max_norm)
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.embed(ids).mean(dim=1)
        h = h + self.down(torch.relu(self.up(h)))
        return self.head(h)
