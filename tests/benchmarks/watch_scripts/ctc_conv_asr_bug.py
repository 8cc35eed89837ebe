"""Toy speech recogniser trained with CTC. Synthetic "utterances": each of 1-6 tokens from an
8-symbol alphabet is rendered as a run of 2-5 noisy 20-dim feature frames (token prototype plus
noise), padded to 40 frames. The acoustic model is a small 1-D conv stack (Conv1d + BatchNorm1d +
ReLU + Dropout, residual) with a per-frame classifier over blank+8 symbols; training uses
F.ctc_loss(..., zero_infinity=True) with per-utterance input/target lengths, OneCycleLR stepped per
batch, gradient clipping, and greedy CTC decoding for a token-error metric. A sanity validation
pass runs before training, like Lightning's sanity check. Bug: evaluate() switches the model to
eval() and never switches it back, and model.train() is called only once, before the sanity check,
so the whole training runs in eval mode (dropout off, BatchNorm using and never updating its
running statistics).

expect: eval mode
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(5)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

VOCAB, FEAT, T_MAX, BLANK = 8, 20, 40, 0
prototypes = torch.randn(VOCAB + 1, FEAT)


def make_batch(n, gen):
    feats = torch.zeros(n, T_MAX, FEAT)
    targets, in_lens, tgt_lens = [], [], []
    for b in range(n):
        L = int(torch.randint(1, 7, (1,), generator=gen))
        toks = torch.randint(1, VOCAB + 1, (L,), generator=gen)
        frames = []
        for tok in toks.tolist():
            reps = int(torch.randint(2, 6, (1,), generator=gen))
            frames.append(prototypes[tok].expand(reps, FEAT))
            frames.append(prototypes[BLANK].expand(1, FEAT))
        seq = torch.cat(frames)[:T_MAX]
        feats[b, :len(seq)] = seq
        targets.append(toks)
        in_lens.append(len(seq))
        tgt_lens.append(L)
    feats = feats + 1.6 * torch.randn(feats.shape, generator=gen)
    return feats, torch.cat(targets), torch.tensor(in_lens), torch.tensor(tgt_lens)


class ConvBlock(nn.Module):
    def __init__(self, ch, k=5, p=0.15):
        super().__init__()
        self.conv = nn.Conv1d(ch, ch, k, padding=k // 2)
        self.bn = nn.BatchNorm1d(ch)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return x + self.drop(F.relu(self.bn(self.conv(x))))


class AcousticModel(nn.Module):
    def __init__(self, feat, ch=48, n_blocks=3, n_out=VOCAB + 1):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv1d(feat, ch, 3, padding=1), nn.BatchNorm1d(ch), nn.ReLU())
        self.blocks = nn.Sequential(*[ConvBlock(ch) for _ in range(n_blocks)])
        self.head = nn.Conv1d(ch, n_out, 1)

    def forward(self, x):                      # x: (B, T, F)
        h = self.blocks(self.stem(x.transpose(1, 2)))
        return self.head(h).permute(2, 0, 1).log_softmax(-1)   # (T, B, C) for ctc_loss


def greedy_decode(log_probs, in_lens):
    best = log_probs.argmax(-1).T.cpu()       # (B, T)
    out = []
    for seq, n in zip(best, in_lens.tolist()):
        seq = torch.unique_consecutive(seq[:n])
        out.append(seq[seq != BLANK].tolist())
    return out


def edit_distance(a, b):
    d = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, cb in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
    return d[-1]


@torch.no_grad()
def evaluate(model, batch):
    model.eval()
    feats, targets, in_lens, tgt_lens = batch
    lp = model(feats.to(device))
    loss = F.ctc_loss(lp, targets.to(device), in_lens.to(device), tgt_lens.to(device),
                      blank=BLANK, zero_infinity=True)
    hyps = greedy_decode(lp, in_lens)
    refs = targets.split(tgt_lens.tolist())
    errs = sum(edit_distance(h, r.tolist()) for h, r in zip(hyps, refs))
    return loss.item(), errs / tgt_lens.sum().item()


gen = torch.Generator().manual_seed(5)
train_batches = [make_batch(32, gen) for _ in range(18)]
val_batch = make_batch(128, gen)

model = AcousticModel(FEAT).to(device)
epochs = 5
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=epochs * len(train_batches))

model.train()
val_loss, ter = evaluate(model, val_batch)
print(f"sanity check: val ctc {val_loss:.3f}  TER {ter:.3f}")

for epoch in range(epochs):
    tot = 0.0
    for feats, targets, in_lens, tgt_lens in train_batches:
        feats, targets = feats.to(device), targets.to(device)
        log_probs = model(feats)
        loss = F.ctc_loss(log_probs, targets, in_lens.to(device), tgt_lens.to(device),
                          blank=BLANK, reduction="mean", zero_infinity=True)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
        optimizer.step()
        scheduler.step()
        tot += loss.detach()
    val_loss, ter = evaluate(model, val_batch)
    print(f"epoch {epoch}  train ctc {float(tot) / len(train_batches):.3f}  val ctc {val_loss:.3f}  TER {ter:.3f}")
