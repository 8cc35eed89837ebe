"""SimCLR-style contrastive pre-training on tabular vectors, written for torchrun: each sample
gives two views (random feature masking and Gaussian noise), an MLP encoder with a projection
head is trained with the NT-Xent loss (temperature 0.5) and LARS-like SGD with momentum; the
training can resume from a checkpointed start epoch, and a linear probe's accuracy on frozen
features is printed at the end. Fixed version: sampler.set_epoch(epoch) at the start of every epoch (the resume logic only chooses the first epoch).
Written from: https://github.com/Spijkervet/SimCLR/pull/26
expect: -
"""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
WORLD, RANK = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))


def make_data(n, gen):
    labels = torch.randint(0, 6, (n,), generator=gen)
    protos = torch.randn(6, 32, generator=torch.Generator().manual_seed(3))
    return protos[labels] + 0.7 * torch.randn(n, 32, generator=gen), labels


def augment(x):
    keep = (torch.rand_like(x) > 0.2).float()
    return x * keep + 0.1 * torch.randn_like(x)


def nt_xent(z1, z2, temperature=0.5):
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    sim = z @ z.t() / temperature
    sim.fill_diagonal_(float("-inf"))
    n = len(z1)
    targets = torch.cat([torch.arange(n, 2 * n), torch.arange(0, n)]).to(z.device)
    return F.cross_entropy(sim, targets)


def main(start_epoch=0, epochs=5):
    gen = torch.Generator().manual_seed(1)
    x, y = make_data(1536, gen)
    data = TensorDataset(x)
    sampler = DistributedSampler(data, num_replicas=WORLD, rank=RANK, shuffle=True)
    loader = DataLoader(data, batch_size=128, sampler=sampler, drop_last=True)
    encoder = nn.Sequential(nn.Linear(32, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, 64)).to(device)
    projector = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 32)).to(device)
    params = list(encoder.parameters()) + list(projector.parameters())
    optimizer = torch.optim.SGD(params, lr=0.3, momentum=0.9, weight_decay=1e-6)
    for epoch in range(start_epoch, epochs):
        sampler.set_epoch(epoch)
        encoder.train()
        projector.train()
        total = 0.0
        for (xb,) in loader:
            xb = xb.to(device)
            loss = nt_xent(projector(encoder(augment(xb))), projector(encoder(augment(xb))))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} nt-xent {total / len(loader):.4f}")
    encoder.eval()
    with torch.no_grad():
        feats = encoder(x.to(device))
    probe = nn.Linear(64, 6).to(device)
    probe_opt = torch.optim.Adam(probe.parameters(), lr=1e-2)
    for _ in range(100):
        probe_opt.zero_grad()
        F.cross_entropy(probe(feats), y.to(device)).backward()
        probe_opt.step()
    print(f"linear probe acc {(probe(feats).argmax(1).cpu() == y).float().mean().item():.3f}")


if __name__ == "__main__":
    main()
