"""A training script written to run under torchrun or alone: it builds a DistributedSampler
(world size and rank from the environment, 1 and 0 when run alone, shuffle=True), a DataLoader
on it with a batch size of 32, a 2-layer MLP classifier on 8 Gaussian clusters, SGD, and a
checkpoint-style loop over epochs that logs the mean loss. Bug: sampler.set_epoch(epoch) is
never called, so the DistributedSampler reshuffles with the same seed every epoch: every epoch
sees the same batches in the same order.
Written from: https://github.com/pytorch/pytorch/issues/31771
expect: same order
"""
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
WORLD, RANK = int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("RANK", 0))


def clusters(n, gen):
    centers = torch.randn(8, 16, generator=torch.Generator().manual_seed(11)) * 2
    labels = torch.randint(0, 8, (n,), generator=gen)
    return centers[labels] + torch.randn(n, 16, generator=gen), labels


def main():
    gen = torch.Generator().manual_seed(9)
    data = TensorDataset(*clusters(1024, gen))
    sampler = DistributedSampler(data, num_replicas=WORLD, rank=RANK, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=32, sampler=sampler, drop_last=True)
    model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 8)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(4):
        model.train()
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(xb.to(device)), yb.to(device))
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} mean loss {total / len(loader):.4f}")


if __name__ == "__main__":
    main()
