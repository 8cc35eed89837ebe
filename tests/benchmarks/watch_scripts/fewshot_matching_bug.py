"""Few-shot classification with a matching network: an embedding MLP encodes a support set of
5 classes x 5 shots and a query set, cosine similarities between queries and supports are turned
into attention over the support labels, and the episode loss is the cross-entropy of the
per-class scores against the query labels. Episodes are sampled from 40 synthetic classes
(Gaussian clusters in 32 dimensions); SGD with momentum and a validation accuracy on held-out
classes. Bug: the attention is softmaxed and summed into class probabilities, which are passed to
F.cross_entropy as if they were logits (log_softmax of probabilities): the loss barely moves.
Written from: https://github.com/gitabcworld/MatchingNetworks/issues/5
expect: probabilities as logits
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
N_WAY, K_SHOT, QUERIES, DIM = 5, 5, 10, 32
centers = torch.randn(40, DIM) * 1.2


def episode(classes):
    chosen = classes[torch.randperm(len(classes))[:N_WAY]]
    support = centers[chosen].repeat_interleave(K_SHOT, 0) + torch.randn(N_WAY * K_SHOT, DIM)
    query = centers[chosen].repeat_interleave(QUERIES, 0) + torch.randn(N_WAY * QUERIES, DIM)
    s_lab = torch.arange(N_WAY).repeat_interleave(K_SHOT)
    q_lab = torch.arange(N_WAY).repeat_interleave(QUERIES)
    return support, s_lab, query, q_lab


class MatchingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, 64))
        self.temperature = 10.0

    def forward(self, support, s_lab, query):
        s = F.normalize(self.encode(support), dim=-1)
        q = F.normalize(self.encode(query), dim=-1)
        attention = F.softmax(self.temperature * q @ s.t(), dim=1)
        return attention @ F.one_hot(s_lab, N_WAY).float()


def main():
    train_classes, val_classes = torch.arange(30), torch.arange(30, 40)
    model = MatchingNet().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for it in range(150):
        support, s_lab, query, q_lab = (t.to(device) for t in episode(train_classes))
        scores = model(support, s_lab, query)
        loss = F.cross_entropy(scores, q_lab)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if (it + 1) % 50 == 0:
            model.eval()
            with torch.no_grad():
                support, s_lab, query, q_lab = (t.to(device) for t in episode(val_classes))
                acc = (model(support, s_lab, query).argmax(1) == q_lab).float().mean().item()
            model.train()
            print(f"episode {it + 1} loss {loss.item():.4f} val acc {acc:.3f}")


if __name__ == "__main__":
    main()
