"""Metric learning for a toy re-identification task: a shared embedding MLP is
trained with a triplet margin loss. Each step the same network is called three
times (anchor, positive, negative batches), pairwise distances are computed with
torch.cdist, and for every anchor the hardest negative in the batch (different
identity) is mined. After each epoch a retrieval validation under torch.no_grad()
gathers the (detached) query and gallery embeddings of the whole split in Python
lists and computes recall@1 at the end. A loss history is kept for the progress log.
expect: -
"""
import resource
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(11)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"

N_ID, DIM, EMB = 200, 48, 32
protos = torch.randn(N_ID, DIM)
mix = torch.randn(DIM, DIM) / DIM ** 0.5


def sample_views(ids):
    """Noisy, nonlinearly distorted observation of each identity."""
    x = protos[ids] + 0.6 * torch.randn(len(ids), DIM)
    return torch.tanh(x @ mix) + 0.05 * torch.randn(len(ids), DIM)


train_ids, val_ids = torch.arange(0, 150), torch.arange(150, N_ID)


class EmbedNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(DIM, 256), nn.ReLU(),
            nn.Linear(256, 256), nn.ReLU(),
            nn.Linear(256, EMB),
        )

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


def triplet_batch(bs):
    a_id = train_ids[torch.randint(0, len(train_ids), (bs,))]
    n_id = train_ids[torch.randint(0, len(train_ids), (bs,))]
    return sample_views(a_id), sample_views(a_id), sample_views(n_id), a_id, n_id


@torch.no_grad()
def recall_at_1(model):
    model.eval()
    q_embs, g_embs = [], []
    for chunk in val_ids.split(16):
        q_embs.append(model(sample_views(chunk).to(device)).detach())
        g_embs.append(model(sample_views(chunk).to(device)).detach())
    q, g = torch.cat(q_embs), torch.cat(g_embs)
    nearest = torch.cdist(q, g).argmin(dim=1)
    model.train()
    return (nearest == torch.arange(len(q), device=device)).float().mean().item()


model = EmbedNet().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
MARGIN, BS, EPOCHS, STEPS_PER_EPOCH = 0.3, 96, 3, 80

loss_history = []
for epoch in range(EPOCHS):
    for it in range(STEPS_PER_EPOCH):
        xa, xp, xn, a_id, n_id = triplet_batch(BS)
        xa, xp, xn = xa.to(device), xp.to(device), xn.to(device)
        a_id, n_id = a_id.to(device), n_id.to(device)

        ea, ep, en = model(xa), model(xp), model(xn)
        d_ap = (ea - ep).norm(dim=1)
        d_an = torch.cdist(ea, en)
        same = a_id[:, None] == n_id[None, :]
        d_an = d_an.masked_fill(same, float("inf"))
        hardest_neg = d_an.min(dim=1).values
        loss = F.relu(d_ap - hardest_neg + MARGIN).mean()

        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_history.append(loss.detach())

    recent = torch.stack(loss_history[-STEPS_PER_EPOCH:]).mean().item()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"epoch {epoch}  triplet loss {recent:.4f}  val recall@1 {recall_at_1(model):.3f}  maxrss {rss_mb:.0f} MB")
