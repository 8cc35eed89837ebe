"""A bag-of-words classifier with a plain nn.Embedding (no max_norm).

expect: -
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(18)
VOCAB = 500


class BagOfWords(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.out = nn.Linear(32, 3)

    def forward(self, tokens):
        return self.out(self.emb(tokens).mean(1))


tokens = torch.randint(0, VOCAB, (1500, 20))
labels = tokens[:, 0] % 3
model = BagOfWords().to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
for _ in range(200):
    idx = torch.randint(0, 1500, (50,))
    loss = nn.functional.cross_entropy(model(tokens[idx].to(device)), labels[idx].to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("loss", loss.item())
