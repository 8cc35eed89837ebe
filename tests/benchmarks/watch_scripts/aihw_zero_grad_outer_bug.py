"""Analog-hardware style example: a 2-layer network fit to a small regression set with plain SGD
in full-batch mode for several "epochs" of 25 iterations each, printing the loss after every
iteration, as in a library's introductory examples. Bug: optimizer.zero_grad() is called once
per epoch, before the inner loop, so within an epoch every step adds the new gradient to all
previous ones: the loss drops for a few iterations, then climbs back up.
Written from: https://github.com/IBM/aihwkit/issues/446
expect: missing zero_grad
"""
import torch
import torch.nn as nn

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"


def main():
    x = torch.tensor([[0.1, 0.2, 0.4, 0.3], [0.2, 0.1, 0.1, 0.3], [0.4, 0.3, 0.2, 0.1], [0.3, 0.4, 0.1, 0.2]]).to(device)
    y = torch.tensor([[1.0, 0.5], [0.7, 0.3], [0.2, 0.9], [0.4, 0.6]]).to(device)
    model = nn.Sequential(nn.Linear(4, 8), nn.Sigmoid(), nn.Linear(8, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    for epoch in range(8):
        optimizer.zero_grad()
        for it in range(25):
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if it % 5 == 0:
                print(f"epoch {epoch} iter {it} loss {loss.item():.6f}")


if __name__ == "__main__":
    main()
