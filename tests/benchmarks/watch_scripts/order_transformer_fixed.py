"""Small Transformer encoder that classifies token order in variable-length sequences.

Task: each sequence (length 6-24, padded) contains random tokens plus one
"open" marker and one "close" marker; the label says whether the open marker
comes before the close marker, so the model needs positional information. The
model is a pre-LN nn.TransformerEncoder with a [CLS] token, learned positional
embeddings and a key-padding mask built on the right device from the lengths.
Training uses AdamW with OneCycleLR stepped per batch, gradient clipping, a
validation pass under torch.no_grad every epoch, early stopping with patience
and an in-memory best checkpoint. Position ids come from a non-persistent
buffer registered once in __init__ and sliced in forward().

expect: -
"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(99)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

PAD, CLS, OPEN, CLOSE = 0, 1, 2, 3
VOCAB, MIN_LEN, MAX_LEN = 24, 6, 24


def make_batch(batch_size, gen):
    lengths = torch.randint(MIN_LEN, MAX_LEN + 1, (batch_size,), generator=gen)
    x = torch.randint(4, VOCAB, (batch_size, MAX_LEN), generator=gen)
    labels = torch.zeros(batch_size, dtype=torch.long)
    for i, L in enumerate(lengths.tolist()):
        a, b = torch.randperm(L, generator=gen)[:2].tolist()
        x[i, a], x[i, b] = OPEN, CLOSE
        x[i, L:] = PAD
        labels[i] = int(a < b)
    x = torch.cat([torch.full((batch_size, 1), CLS), x], dim=1)
    return x, lengths + 1, labels


class OrderClassifier(nn.Module):
    def __init__(self, d_model=48, nhead=4, layers=2, max_len=MAX_LEN + 1):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d_model, padding_idx=PAD)
        self.pos = nn.Embedding(max_len, d_model)
        self.register_buffer("position_ids", torch.arange(max_len), persistent=False)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2 * d_model, dropout=0.05,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.cls_head = nn.Linear(d_model, 2)

    def forward(self, x, lengths):
        seq_len = x.size(1)
        pos_ids = self.position_ids[:seq_len]
        h = self.tok(x) + self.pos(pos_ids)[None]
        pad_mask = torch.arange(seq_len, device=x.device)[None, :] >= lengths[:, None]
        h = self.encoder(h, src_key_padding_mask=pad_mask)
        return self.cls_head(self.norm(h[:, 0]))


def run_eval(model, data):
    model.eval()
    correct = total = 0
    loss = 0.0
    with torch.no_grad():
        for x, lengths, y in data:
            logits = model(x, lengths)
            loss += F.cross_entropy(logits, y, reduction="sum").item()
            correct += (logits.argmax(-1) == y).sum().item()
            total += y.numel()
    return loss / total, correct / total


def main():
    gen = torch.Generator().manual_seed(99)
    to_dev = lambda b: tuple(t.to(device) for t in b)
    train = [to_dev(make_batch(32, gen)) for _ in range(30)]
    val = [to_dev(make_batch(128, gen)) for _ in range(3)]

    model = OrderClassifier().to(device)
    epochs = 5
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=epochs * len(train), pct_start=0.2)

    best_loss, best_state, patience, bad_epochs = float("inf"), None, 3, 0
    for epoch in range(epochs):
        model.train()
        for step, (x, lengths, y) in enumerate(train):
            loss = F.cross_entropy(model(x, lengths), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
        val_loss, val_acc = run_eval(model, val)
        print(f"epoch {epoch}  train_loss {loss.item():.3f}  val_loss {val_loss:.3f}  val_acc {val_acc:.3f}  "
              f"lr {sched.get_last_lr()[0]:.1e}")
        if val_loss < best_loss - 1e-3:
            best_loss, bad_epochs = val_loss, 0
            best_state = {"epoch": epoch, "model": copy.deepcopy(model.state_dict()),
                          "optim": copy.deepcopy(opt.state_dict())}
        else:
            bad_epochs += 1
            if bad_epochs >= patience:
                print("early stopping")
                break
    model.load_state_dict(best_state["model"])
    print(f"restored epoch {best_state['epoch']}: val_acc {run_eval(model, val)[1]:.3f}")


if __name__ == "__main__":
    main()
