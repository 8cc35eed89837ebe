"""Multi-source intent classifier trained under bfloat16 autocast on CPU.

Utterances (synthetic bags of token ids) come from three annotation sources
that each label only a subset of the 12 intents, so for every example the
logits of intents its source never annotates are masked out (a per-source
boolean label mask built with device=...). The model is an EmbeddingBag encoder
with a two-layer MLP head, run under torch.autocast(device_type="cpu",
dtype=torch.bfloat16) for the forward pass. The loss is a hand-written
label-smoothing cross-entropy that spreads the smoothing mass only over the
intents valid for the example's source; it uses log_softmax on the masked
logits, so masked classes get a very negative but finite log-probability and a
zero target weight. AdamW with gradient clipping; accuracy on a held-out split
is reported every epoch.

expect: -
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

np.random.seed(5)
torch.manual_seed(5)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
amp_device = "cuda" if device == "cuda" else "cpu"

VOCAB, N_INTENTS, MAX_LEN = 500, 12, 16
SOURCES = {  # which intents each annotation source labels
    0: list(range(0, 8)),
    1: list(range(4, 12)),
    2: [0, 2, 4, 6, 8, 10],
}


def make_split(n, rng, topic_words):
    src = rng.integers(0, len(SOURCES), size=n)
    y = np.array([rng.choice(SOURCES[s]) for s in src])
    lengths = rng.integers(6, MAX_LEN + 1, size=n)
    tokens = np.zeros((n, MAX_LEN), dtype=np.int64)
    for i in range(n):
        k = lengths[i]
        n_topic = max(1, int(0.35 * k))
        words = np.concatenate([rng.choice(topic_words[y[i]], n_topic),
                                rng.integers(1, VOCAB, k - n_topic)])
        tokens[i, :k] = rng.permutation(words)
    return torch.from_numpy(tokens), torch.from_numpy(src), torch.from_numpy(y)


class IntentNet(nn.Module):
    def __init__(self, dim=64, hidden=128):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, dim, mode="mean", padding_idx=0)
        self.head = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(0.2), nn.Linear(hidden, N_INTENTS))

    def forward(self, tokens):
        return self.head(self.embed(tokens))


class MaskedLabelSmoothingLoss(nn.Module):
    def __init__(self, smoothing=0.1, fill=-1e4):
        super().__init__()
        self.smoothing, self.fill = smoothing, fill

    def forward(self, logits, target, valid):
        logits = logits.masked_fill(~valid, self.fill)
        n_valid = valid.sum(-1, keepdim=True).to(logits.dtype)
        true_dist = valid.to(logits.dtype) * (self.smoothing / (n_valid - 1))
        true_dist = true_dist.scatter(1, target[:, None], 1.0 - self.smoothing)
        log_probs = F.log_softmax(logits, dim=-1)
        return -(true_dist * log_probs).sum(-1).mean()


def main():
    rng = np.random.default_rng(5)
    topic_words = [rng.integers(1, VOCAB, 12) for _ in range(N_INTENTS)]
    tr_tok, tr_src, tr_y = make_split(4000, rng, topic_words)
    va_tok, va_src, va_y = make_split(1500, rng, topic_words)

    label_mask = torch.zeros(len(SOURCES), N_INTENTS, dtype=torch.bool, device=device)
    for s, intents in SOURCES.items():
        label_mask[s, intents] = True

    model = IntentNet().to(device)
    criterion = MaskedLabelSmoothingLoss(smoothing=0.1)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    batch, epochs = 64, 3
    va_tok, va_src, va_y = va_tok.to(device), va_src.to(device), va_y.to(device)

    for epoch in range(epochs):
        model.train()
        perm = torch.randperm(len(tr_y))
        seen = 0
        for b in range(0, len(perm) - batch + 1, batch):
            idx = perm[b:b + batch]
            tok, src, y = tr_tok[idx].to(device), tr_src[idx].to(device), tr_y[idx].to(device)
            with torch.autocast(device_type=amp_device, dtype=torch.bfloat16):
                logits = model(tok)
                loss = criterion(logits, y, label_mask[src])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=2.0)
            opt.step()
            seen += 1
            if seen % 30 == 0:
                print(f"epoch {epoch} batch {seen:3d} loss {loss.item():.4f}")

        model.eval()
        with torch.no_grad(), torch.autocast(device_type=amp_device, dtype=torch.bfloat16):
            logits = model(va_tok).float().masked_fill(~label_mask[va_src], float("-inf"))
            acc = (logits.argmax(-1) == va_y).float().mean().item()
        print(f"epoch {epoch} val_acc {acc:.3f}")


if __name__ == "__main__":
    main()
