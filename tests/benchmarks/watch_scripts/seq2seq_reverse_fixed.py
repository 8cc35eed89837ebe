"""GRU encoder-decoder that learns to reverse-and-increment digit strings.

Source sequences are random digit strings (length 6-12, padded); the target is the
reversed string with every digit shifted by +1 mod 10, wrapped in BOS/EOS tokens.
A bidirectional GRU encoder feeds a GRU decoder trained with teacher forcing; the
decoder's input embedding and output projection share weights (weight tying).
Batches are generated on the fly directly on the device, padding masks are built
with device=..., the loss ignores PAD, Adam runs under a linear warm-up LambdaLR
stepped every batch, gradients are clipped, and after every epoch a greedy decode
in eval mode under no_grad reports exact-match accuracy.  The epoch loss is
accumulated as a detached device scalar and read once per epoch.

expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(11)

PAD, BOS, EOS = 0, 1, 2
N_DIGITS = 10
VOCAB = 3 + N_DIGITS
MIN_LEN, MAX_LEN = 6, 12


def make_batch(batch_size, gen):
    lengths = torch.randint(MIN_LEN, MAX_LEN + 1, (batch_size,), generator=gen, device=device)
    digits = torch.randint(0, N_DIGITS, (batch_size, MAX_LEN), generator=gen, device=device)
    pos = torch.arange(MAX_LEN, device=device).unsqueeze(0)
    valid = pos < lengths.unsqueeze(1)
    src = torch.where(valid, digits + 3, torch.full_like(digits, PAD))
    # reverse only the valid prefix of each row
    rev_idx = (lengths.unsqueeze(1) - 1 - pos).clamp(min=0)
    rev = torch.gather(digits, 1, rev_idx)
    rev = torch.where(valid, (rev + 1) % N_DIGITS + 3, torch.full_like(rev, PAD))
    tgt = torch.full((batch_size, MAX_LEN + 2), PAD, dtype=torch.long, device=device)
    tgt[:, 0] = BOS
    tgt[:, 1:MAX_LEN + 1] = rev
    tgt.scatter_(1, (lengths + 1).unsqueeze(1), EOS)
    return src, lengths, tgt


class Seq2Seq(nn.Module):
    def __init__(self, vocab, emb=48, hidden=64):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.encoder = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.tgt_emb = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.decoder = nn.GRU(emb + 2 * hidden, hidden, batch_first=True)
        self.pre_out = nn.Linear(hidden, emb)
        self.out = nn.Linear(emb, vocab, bias=False)
        self.out.weight = self.tgt_emb.weight  # weight tying

    def encode(self, src, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.src_emb(src), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, h = self.encoder(packed)
        summary = torch.cat([h[0], h[1]], dim=-1)
        return summary, torch.tanh(self.bridge(summary)).unsqueeze(0)

    def decode_step(self, tok_emb, summary, h):
        inp = torch.cat([tok_emb, summary.unsqueeze(1).expand(-1, tok_emb.size(1), -1)], dim=-1)
        o, h = self.decoder(inp, h)
        return self.out(torch.tanh(self.pre_out(o))), h

    def forward(self, src, lengths, tgt_in):
        summary, h = self.encode(src, lengths)
        logits, _ = self.decode_step(self.tgt_emb(tgt_in), summary, h)
        return logits

    @torch.no_grad()
    def greedy(self, src, lengths, max_len=MAX_LEN + 1):
        summary, h = self.encode(src, lengths)
        tok = torch.full((src.size(0), 1), BOS, dtype=torch.long, device=src.device)
        outs = []
        for _ in range(max_len):
            logits, h = self.decode_step(self.tgt_emb(tok), summary, h)
            tok = logits.argmax(-1)
            outs.append(tok)
        return torch.cat(outs, dim=1)


def exact_match(model, gen, n_batches=4, bs=128):
    model.eval()
    hits, total = 0, 0
    for _ in range(n_batches):
        src, lengths, tgt = make_batch(bs, gen)
        pred = model.greedy(src, lengths)
        gold = tgt[:, 1:]
        mask = gold != PAD
        hits += ((pred == gold) | ~mask).all(dim=1).sum().item()
        total += bs
    model.train()
    return hits / total


def main():
    train_gen = torch.Generator(device=device).manual_seed(0)
    eval_gen = torch.Generator(device=device).manual_seed(99)
    model = Seq2Seq(VOCAB).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    warmup = 40
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))

    epochs, batches_per_epoch, bs = 2, 80, 64
    for epoch in range(epochs):
        model.train()
        epoch_loss = 0.0
        for _ in range(batches_per_epoch):
            src, lengths, tgt = make_batch(bs, train_gen)
            logits = model(src, lengths, tgt[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt[:, 1:].reshape(-1), ignore_index=PAD)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            epoch_loss += loss.detach()
        acc = exact_match(model, eval_gen)
        print(f"epoch {epoch}  mean loss {epoch_loss / batches_per_epoch:.4f}  "
              f"lr {sched.get_last_lr()[0]:.1e}  exact-match {acc:.3f}")


if __name__ == "__main__":
    main()
