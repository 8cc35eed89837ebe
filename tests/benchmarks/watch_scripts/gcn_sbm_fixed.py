"""Semi-supervised node classification on a synthetic stochastic-block-model graph.

A 600-node graph with 4 communities is sampled (dense intra-community, sparse
inter-community edges); node features are noisy community indicators mixed through a
random projection.  The model is a GCN-flavoured MLP: a frozen "pretrained" linear
feature projection (requires_grad_(False)), a trainable two-layer node encoder, one
symmetric-normalised adjacency propagation  A_hat @ H  (A_hat = D^-1/2 (A+I) D^-1/2,
precomputed once in numpy and copied to the device as a buffer), then an MLP head.
Full-batch training with Adam on 15% labelled nodes (masks built on the device),
dropout with train()/eval() switching, early stopping on validation accuracy and an
in-memory best checkpoint.  Fixed version: the propagation is done with the device
buffer, so gradients flow back into the encoder.

expect: -
"""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(7)
np.random.seed(7)

N_NODES, N_COMM, FEAT_DIM, RAW_DIM = 600, 4, 48, 32


def sample_sbm(n, k, p_in=0.05, p_out=0.008, rng=np.random):
    comm = rng.randint(0, k, size=n)
    same = comm[:, None] == comm[None, :]
    prob = np.where(same, p_in, p_out)
    upper = np.triu(rng.rand(n, n) < prob, 1)
    adj = (upper | upper.T).astype(np.float32)
    return adj, comm


def normalise_adjacency(adj):
    a = adj + np.eye(adj.shape[0], dtype=adj.dtype)
    d_inv_sqrt = 1.0 / np.sqrt(a.sum(1))
    return (d_inv_sqrt[:, None] * a * d_inv_sqrt[None, :]).astype(np.float32)


class NodeClassifier(nn.Module):
    def __init__(self, a_hat_np, raw_dim, feat_dim, hidden, n_classes, p_drop=0.3):
        super().__init__()
        self.register_buffer("a_hat", torch.from_numpy(a_hat_np))
        # "pretrained" projection shipped with the features, kept frozen
        self.feat_proj = nn.Linear(raw_dim, feat_dim)
        self.feat_proj.requires_grad_(False)
        self.encoder = nn.Sequential(
            nn.Linear(feat_dim, hidden), nn.ReLU(), nn.Dropout(p_drop), nn.Linear(hidden, hidden)
        )
        self.head = nn.Sequential(nn.ReLU(), nn.Dropout(p_drop), nn.Linear(hidden, hidden // 2),
                                  nn.ReLU(), nn.Linear(hidden // 2, n_classes))

    def propagate(self, h):
        # one hop of symmetric-normalised neighbourhood averaging
        return self.a_hat @ h

    def forward(self, raw):
        x = self.feat_proj(raw)
        h = self.encoder(x)
        h = self.propagate(h)
        return self.head(h)


def accuracy(logits, y, mask):
    return (logits[mask].argmax(-1) == y[mask]).float().mean().item()


def main():
    rng = np.random.RandomState(7)
    adj, comm = sample_sbm(N_NODES, N_COMM, rng=rng)
    onehot = np.eye(N_COMM, dtype=np.float32)[comm]
    mixing = rng.randn(N_COMM, RAW_DIM).astype(np.float32)
    raw = onehot @ mixing + 2.2 * rng.randn(N_NODES, RAW_DIM).astype(np.float32)
    a_hat = normalise_adjacency(adj)
    print(f"graph: {N_NODES} nodes, {int(adj.sum() // 2)} edges, mean degree {adj.sum(1).mean():.1f}")

    raw_t = torch.from_numpy(raw).to(device)
    y = torch.from_numpy(comm).long().to(device)
    order = torch.randperm(N_NODES, device=device)
    train_mask = torch.zeros(N_NODES, dtype=torch.bool, device=device)
    val_mask = torch.zeros_like(train_mask)
    test_mask = torch.zeros_like(train_mask)
    train_mask[order[:90]] = True
    val_mask[order[90:240]] = True
    test_mask[order[240:]] = True

    model = NodeClassifier(a_hat, RAW_DIM, FEAT_DIM, hidden=64, n_classes=N_COMM).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-2, weight_decay=5e-4)

    best = {"val_acc": -1.0, "epoch": -1, "state": None}
    patience, bad = 60, 0
    for epoch in range(300):
        model.train()
        opt.zero_grad()
        logits = model(raw_t)
        loss = F.cross_entropy(logits[train_mask], y[train_mask])
        loss.backward()
        opt.step()

        model.eval()
        with torch.no_grad():
            logits = model(raw_t)
        val_acc = accuracy(logits, y, val_mask)
        if val_acc > best["val_acc"]:
            best = {"val_acc": val_acc, "epoch": epoch, "state": copy.deepcopy(model.state_dict())}
            bad = 0
        else:
            bad += 1
        if epoch % 25 == 0:
            print(f"epoch {epoch:3d}  loss {loss.item():.4f}  train {accuracy(logits, y, train_mask):.3f}  val {val_acc:.3f}")
        if bad >= patience:
            print(f"early stop at epoch {epoch}")
            break

    model.load_state_dict(best["state"])
    model.eval()
    with torch.no_grad():
        test_acc = accuracy(model(raw_t), y, test_mask)
    print(f"best epoch {best['epoch']}  val {best['val_acc']:.3f}  test {test_acc:.3f}")


if __name__ == "__main__":
    main()
