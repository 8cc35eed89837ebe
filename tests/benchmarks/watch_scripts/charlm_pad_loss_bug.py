"""Character-level language model (embedding, 1-layer GRU, linear head) on synthetic "words" of
varying length drawn from a small grammar; sequences are right-padded with PAD=0 to the longest
in the batch by pad_sequence and the model predicts the next character. Teacher forcing, Adam,
gradient clipping at 1.0 and a validation perplexity each epoch. Bug: nn.CrossEntropyLoss() is
built without ignore_index=PAD, so every padded position is a target: the model spends its
capacity predicting PAD after PAD (more than half of all targets) and the reported loss and
perplexity are mostly about padding.
Written from: https://github.com/huggingface/transformers/issues/11616
expect: padding in loss
"""
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
PAD, BOS, EOS, VOCAB = 0, 1, 2, 30
syllables = [torch.randint(3, VOCAB, (int(torch.randint(2, 4, (1,))),)) for _ in range(20)]


def word(gen):
    parts = [syllables[int(i)] for i in torch.randint(0, 20, (int(torch.randint(1, 8, (1,), generator=gen)),), generator=gen)]
    return torch.cat([torch.tensor([BOS]), *parts, torch.tensor([EOS])])


def batch(n, gen):
    seqs = pad_sequence([word(gen) for _ in range(n)], batch_first=True, padding_value=PAD)
    return seqs[:, :-1], seqs[:, 1:]


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 48, padding_idx=PAD)
        self.rnn = nn.GRU(48, 96, batch_first=True)
        self.head = nn.Linear(96, VOCAB)

    def forward(self, x):
        out, _ = self.rnn(self.embed(x))
        return self.head(out)


def main():
    gen = torch.Generator().manual_seed(4)
    model = CharLM().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for epoch in range(2):
        model.train()
        for _ in range(40):
            x, y = (t.to(device) for t in batch(32, gen))
            logits = model(x)
            loss = criterion(logits.reshape(-1, VOCAB), y.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            x, y = (t.to(device) for t in batch(256, gen))
            val = criterion(model(x).reshape(-1, VOCAB), y.reshape(-1))
        print(f"epoch {epoch} train loss {loss.item():.3f} val ppl {val.exp().item():.2f}")


if __name__ == "__main__":
    main()
