"""A bag-of-embeddings text classifier, fixed: the model ends in nn.LogSoftmax, whose output is
what nn.NLLLoss expects (log-probabilities); the prediction is the same argmax.

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
        self.out = nn.LogSoftmax(dim=1)

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
        log_probs = model(tokens)
        loss = criterion(log_probs, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (log_probs.argmax(1) == y).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} acc {correct / n:.3f}")
