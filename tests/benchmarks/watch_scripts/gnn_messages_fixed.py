"""Semi-supervised node classification on a synthetic stochastic-block-model graph (4 communities,
noisy node features). A two-layer graph convolution network is written by hand: symmetric degree
normalisation computed once with index_add_, neighbour aggregation with index_add_ over the edge
list, self-loops, dropout, and a linear skip. Full-batch training with Adam + weight decay, masks for
train/val/test built on the device, validation with eval()/no_grad every 10 epochs, early stopping
on validation accuracy, and the training loss/accuracy read back to the host only at log time.

expect: -
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(3)
dev = "cuda" if torch.cuda.is_available() else ("mps" if torch.backends.mps.is_available() else "cpu")

N, C, FEAT = 600, 4, 32
labels = torch.arange(N) % C
labels = labels[torch.randperm(N)].to(dev)
same = labels[:, None] == labels[None, :]
prob = torch.where(same, torch.tensor(0.04, device=dev), torch.tensor(0.006, device=dev))
adj = torch.rand(N, N, device=dev) < prob
adj = torch.triu(adj, diagonal=1)
src, dst = adj.nonzero(as_tuple=True)
edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)
centers = torch.randn(C, FEAT, device=dev) * 0.6
x = centers[labels] + torch.randn(N, FEAT, device=dev)

node_perm = torch.randperm(N, device=dev)
train_mask = torch.zeros(N, dtype=torch.bool, device=dev)
val_mask = torch.zeros_like(train_mask)
test_mask = torch.zeros_like(train_mask)
train_mask[node_perm[:60]] = True
val_mask[node_perm[60:200]] = True
test_mask[node_perm[200:]] = True


class GraphConv(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.lin = nn.Linear(d_in, d_out, bias=False)
        self.skip = nn.Linear(d_in, d_out)

    def forward(self, h, edge_index, edge_weight):
        msg_src, msg_dst = edge_index
        hw = self.lin(h)
        out = torch.zeros_like(hw).index_add_(0, msg_dst, hw[msg_src] * edge_weight[:, None])
        return out + self.skip(h)


class GCN(nn.Module):
    def __init__(self, d_in, hidden, n_cls, p_drop=0.5):
        super().__init__()
        self.conv1 = GraphConv(d_in, hidden)
        self.conv2 = GraphConv(hidden, n_cls)
        self.drop = nn.Dropout(p_drop)

    def forward(self, h, edge_index, edge_weight):
        h = F.relu(self.conv1(self.drop(h), edge_index, edge_weight))
        return self.conv2(self.drop(h), edge_index, edge_weight)


def gcn_norm(edge_index, n):
    loops = torch.arange(n, device=edge_index.device)
    ei = torch.cat([edge_index, torch.stack([loops, loops])], dim=1)
    deg = torch.zeros(n, device=ei.device).index_add_(0, ei[1], torch.ones(ei.shape[1], device=ei.device))
    dinv = deg.pow(-0.5)
    return ei, dinv[ei[0]] * dinv[ei[1]]


ei, ew = gcn_norm(edge_index, N)
model = GCN(FEAT, 32, C).to(dev)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)


@torch.no_grad()
def evaluate(mask):
    model.eval()
    pred = model(x, ei, ew).argmax(1)
    return (pred[mask] == labels[mask]).float().mean().item()


best_val, best_state, wait = 0.0, None, 0
for epoch in range(1, 301):
    model.train()
    optimizer.zero_grad()
    logits = model(x, ei, ew)
    loss = F.cross_entropy(logits[train_mask], labels[train_mask])
    loss.backward()
    optimizer.step()

    if epoch % 10 == 0:
        val_acc = evaluate(val_mask)
        if val_acc > best_val:
            best_val, wait = val_acc, 0
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        else:
            wait += 1
        if epoch % 50 == 0:
            train_acc = (logits[train_mask].argmax(1) == labels[train_mask]).float().mean()
            print(f"epoch {epoch:3d} loss {loss.item():.4f} train acc {train_acc.item():.3f} val acc {val_acc:.3f}")
        if wait >= 8:
            print(f"early stop at epoch {epoch}")
            break

model.load_state_dict(best_state)
print(f"best val acc {best_val:.3f}  test acc {evaluate(test_mask):.3f}")
