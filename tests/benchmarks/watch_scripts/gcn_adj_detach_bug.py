"""Graph convolution with a learned adjacency (A-GCN style) for multi-label classification of
nodes: node features are projected by two learned matrices (phi, theta), their scaled dot
products give a soft adjacency (row-softmax), and two graph-convolution layers propagate over it.
Synthetic graph data with community structure; BCE-with-logits loss, Adam, micro-accuracy per
epoch. Bug: the adjacency is built under `.detach()` ("the graph should be fixed within a
forward"), so phi and theta never receive a gradient: the adjacency stays the random one from
initialisation.
Written from: https://github.com/queenie88/A-GCN/issues/4
expect: no gradient
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
NODES, FEATS, LABELS = 60, 16, 4


def graphs(n, gen):
    community = torch.arange(NODES) % LABELS
    feats = F.one_hot(community, LABELS).float() @ torch.randn(LABELS, FEATS, generator=gen)
    x = feats + 0.8 * torch.randn(n, NODES, FEATS, generator=gen)
    y = F.one_hot(community, LABELS).float().expand(n, -1, -1).clone()
    flips = torch.rand(n, NODES, LABELS, generator=gen) < 0.05
    return x, torch.where(flips, 1 - y, y)


class AGCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.phi = nn.Linear(FEATS, 16, bias=False)
        self.theta = nn.Linear(FEATS, 16, bias=False)
        self.gc1 = nn.Linear(FEATS, 32)
        self.gc2 = nn.Linear(32, LABELS)

    def adjacency(self, x):
        scores = self.phi(x) @ self.theta(x).transpose(1, 2) / 4.0
        return torch.softmax(scores, dim=-1).detach()

    def forward(self, x):
        adj = self.adjacency(x)
        h = F.relu(adj @ self.gc1(x))
        return adj @ self.gc2(h)


def main():
    gen = torch.Generator().manual_seed(17)
    x, y = graphs(200, gen)
    model = AGCN().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for epoch in range(4):
        model.train()
        for i in range(0, len(x), 16):
            optimizer.zero_grad()
            logits = model(x[i: i + 16].to(device))
            loss = F.binary_cross_entropy_with_logits(logits, y[i: i + 16].to(device))
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            acc = ((model(x[:64].to(device)) > 0).float() == y[:64].to(device)).float().mean().item()
        print(f"epoch {epoch} loss {loss.item():.4f} acc {acc:.3f}")


if __name__ == "__main__":
    main()
