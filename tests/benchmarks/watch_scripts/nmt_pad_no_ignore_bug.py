"""Sequence-to-sequence "translation" in the style of the PyTorch seq2seq tutorial with batches:
source sentences of 4-12 tokens are mapped to target sentences (each token shifted through a
fixed vocabulary map, order reversed), padded with PAD=0 after EOS; a GRU encoder and a GRU
decoder with teacher forcing, Adam, and a token-accuracy metric over non-pad target positions
(the target mask tgt != PAD is built for it). Bug: the loss is
F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1)) with no ignore_index, so every PAD
position after EOS is trained as a token to predict: on these lengths a third of the target
positions are padding, and the model learns to emit PAD.
Written from: https://github.com/lucidrains/DALLE-pytorch/pull/58
expect: padding in loss
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
PAD, BOS, EOS, V, MAXLEN = 0, 1, 2, 40, 14
mapping = torch.randperm(V - 3, generator=torch.Generator().manual_seed(5)) + 3


def pairs(n, gen):
    src = torch.full((n, MAXLEN), PAD)
    tgt = torch.full((n, MAXLEN + 1), PAD)
    for i in range(n):
        length = int(torch.randint(4, 13, (1,), generator=gen))
        words = torch.randint(3, V, (length,), generator=gen)
        src[i, :length], src[i, length] = words, EOS
        tgt[i, 0] = BOS
        tgt[i, 1: length + 1], tgt[i, length + 1] = mapping[words.flip(0) - 3], EOS
    return src, tgt


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.src_embed = nn.Embedding(V, 64, padding_idx=PAD)
        self.tgt_embed = nn.Embedding(V, 64, padding_idx=PAD)
        self.encoder = nn.GRU(64, 128, batch_first=True)
        self.decoder = nn.GRU(64, 128, batch_first=True)
        self.out = nn.Linear(128, V)

    def forward(self, src, tgt_in):
        _, state = self.encoder(self.src_embed(src))
        hidden, _ = self.decoder(self.tgt_embed(tgt_in), state)
        return self.out(hidden)


def main():
    gen = torch.Generator().manual_seed(1)
    src, tgt = pairs(1200, gen)
    model = Seq2Seq().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(4):
        model.train()
        order = torch.randperm(len(src))
        for i in range(0, len(order), 48):
            idx = order[i: i + 48]
            s, t = src[idx].to(device), tgt[idx].to(device)
            tgt_in, tgt_out = t[:, :-1], t[:, 1:]
            logits = model(s, tgt_in)
            loss = F.cross_entropy(logits.reshape(-1, V), tgt_out.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            mask = tgt_out != PAD
            acc = ((logits.argmax(-1) == tgt_out) & mask).sum() / mask.sum()
        print(f"epoch {epoch} loss {loss.item():.4f} token acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
