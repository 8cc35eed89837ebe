"""Product-review sentiment classifier (EmbeddingBag over hashed word ids, two hidden layers) on a
synthetic corpus where a few "polar" word ids decide the label. Batches come from a collate
function that builds offsets, the loop uses Adam and logs every 20 steps, and the model is
evaluated under no_grad after each epoch. Bug: the classifier ends in nn.Softmax(dim=1) and its
output goes to nn.CrossEntropyLoss, which applies log_softmax itself: the loss sees probabilities
as logits, its gradients shrink and the loss cannot go much below log(C) - 1.
Written from: https://github.com/jindongwang/Deep-learning-activity-recognition/issues/10
expect: probabilities as logits
"""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
VOCAB, CLASSES = 2000, 3


class Reviews(Dataset):
    def __init__(self, n, gen):
        self.docs, self.labels = [], []
        polar = torch.arange(CLASSES * 20).view(CLASSES, 20)
        for _ in range(n):
            label = int(torch.randint(0, CLASSES, (1,), generator=gen))
            length = int(torch.randint(8, 30, (1,), generator=gen))
            words = torch.randint(100, VOCAB, (length,), generator=gen)
            words[: length // 4] = polar[label][torch.randint(0, 20, (length // 4,), generator=gen)]
            self.docs.append(words)
            self.labels.append(label)

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        return self.docs[i], self.labels[i]


def collate(batch):
    words = [b[0] for b in batch]
    offsets = torch.tensor([0] + [len(w) for w in words[:-1]]).cumsum(0)
    return torch.cat(words), offsets, torch.tensor([b[1] for b in batch])


class SentimentNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, 64, mode="mean")
        self.head = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, CLASSES), nn.Softmax(dim=1))

    def forward(self, words, offsets):
        return self.head(self.embed(words, offsets))


def main():
    gen = torch.Generator().manual_seed(1)
    train = DataLoader(Reviews(1200, gen), batch_size=64, shuffle=True, collate_fn=collate)
    val = DataLoader(Reviews(600, gen), batch_size=200, collate_fn=collate)
    model = SentimentNet().to(device)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    step = 0
    for epoch in range(3):
        model.train()
        for words, offsets, labels in train:
            words, offsets, labels = words.to(device), offsets.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = criterion(model(words, offsets), labels)
            loss.backward()
            optimizer.step()
            step += 1
            if step % 20 == 0:
                print(f"step {step} loss {loss.item():.4f}")
        model.eval()
        correct = total = 0
        with torch.no_grad():
            for words, offsets, labels in val:
                pred = model(words.to(device), offsets.to(device)).argmax(1).cpu()
                correct += (pred == labels).sum().item()
                total += len(labels)
        print(f"epoch {epoch} val acc {correct / total:.3f}")


if __name__ == "__main__":
    main()
