"""A bag-of-embeddings text classifier whose model ends in nn.Softmax, trained with nn.NLLLoss.
NLLLoss expects log-probabilities (LogSoftmax's output) and takes -x[target]; given probabilities
it takes -p[target], a loss bounded in [-1, 0] that is always negative, with gradients that
vanish as soon as a prediction is confident either way. Written from
AnubhavGupta3377/Text-Classification-Models-Pytorch#9 (the model gives only a softmax to NLLLoss,
'the loss is always negative'), clvrai/ACGAN-PyTorch#4 ('Change Softmax to LogSoftmax to use
NLLLoss') and pandeykartikey/Hierarchical-Attention-Network#3.

expect: not log-probabilities
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(21)

vocab, classes, n, length = 2000, 5, 4000, 24
topic_words = torch.randint(0, vocab, (classes, 40))
labels = torch.randint(0, classes, (n,))
docs = torch.randint(0, vocab, (n, length))
docs[:, :8] = topic_words[labels][:, torch.randint(0, 40, (8,))]  # each doc carries words of its topic


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab, 64, mode="mean")
        self.fc = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, classes))
        self.out = nn.Softmax(dim=1)

    def forward(self, tokens):
        return self.out(self.fc(self.embed(tokens)))


model = BagClassifier().to(device)
criterion = nn.NLLLoss()
opt = torch.optim.Adam(model.parameters(), lr=2e-3)

for epoch in range(4):
    perm = torch.randperm(n)
    correct = 0
    for i in range(0, n, 100):
        idx = perm[i:i + 100]
        tokens, y = docs[idx].to(device), labels[idx].to(device)
        probs = model(tokens)
        loss = criterion(probs, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (probs.argmax(1) == y).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} acc {correct / n:.3f}")
