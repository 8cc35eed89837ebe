"""Named-entity tagger: word embeddings and a bidirectional LSTM over padded sentences, a linear
layer to 5 BIO tags, and a hand-written token-level loss that builds a mask from the sentence
lengths (so padding does not count) and reports token accuracy over real tokens only. Adam,
sentences sorted into length buckets, an evaluation pass under no_grad. Bug: the per-token losses
are computed with reduction="none" and the mask is built, but the loss is `token_loss.mean()`
over every position: padded positions (label 0, "O") are trained as real tokens, and a model that
predicts "O" everywhere is rewarded.
Written from: https://github.com/QwenLM/Qwen/issues/719
expect: padding in loss
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
VOCAB, TAGS, MAXLEN = 500, 5, 40
entity_words = torch.arange(10, 60)


def sentences(n, gen):
    lengths = torch.randint(5, MAXLEN, (n,), generator=gen)
    words = torch.randint(60, VOCAB, (n, MAXLEN), generator=gen)
    tags = torch.zeros(n, MAXLEN, dtype=torch.long)
    for i in range(n):
        for _ in range(int(torch.randint(1, 3, (1,), generator=gen))):
            start = int(torch.randint(0, int(lengths[i]) - 2, (1,), generator=gen))
            kind = int(torch.randint(0, 2, (1,), generator=gen))
            words[i, start] = entity_words[kind * 25 + int(torch.randint(0, 25, (1,), generator=gen))]
            words[i, start + 1] = entity_words[kind * 25 + int(torch.randint(0, 25, (1,), generator=gen))]
            tags[i, start], tags[i, start + 1] = 1 + 2 * kind, 2 + 2 * kind
    positions = torch.arange(MAXLEN)[None]
    words[positions >= lengths[:, None]] = 0
    return words, tags, lengths


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 64, padding_idx=0)
        self.lstm = nn.LSTM(64, 64, batch_first=True, bidirectional=True)
        self.out = nn.Linear(128, TAGS)

    def forward(self, words):
        hidden, _ = self.lstm(self.embed(words))
        return self.out(hidden)


def masked_token_loss(logits, tags, lengths):
    token_loss = F.cross_entropy(logits.transpose(1, 2), tags, reduction="none")
    mask = (torch.arange(tags.shape[1], device=tags.device)[None] < lengths[:, None]).float()
    accuracy = ((logits.argmax(-1) == tags).float() * mask).sum() / mask.sum()
    return token_loss.mean(), accuracy


def main():
    gen = torch.Generator().manual_seed(7)
    words, tags, lengths = sentences(600, gen)
    model = Tagger().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for epoch in range(2):
        model.train()
        order = torch.argsort(lengths + torch.randint(0, 4, lengths.shape))
        for i in range(0, len(order), 32):
            idx = order[i: i + 32]
            w, t, n = words[idx].to(device), tags[idx].to(device), lengths[idx].to(device)
            loss, acc = masked_token_loss(model(w), t, n)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f} token acc {acc.item():.3f}")


if __name__ == "__main__":
    main()
