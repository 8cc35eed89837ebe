"""A model whose middle step goes through numpy (a "standardize" helper): the graph is cut there,
so the encoder before it never receives a gradient.

expect: no gradient
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(6)


def standardize(h):
    arr = h.detach().cpu().numpy()
    arr = (arr - arr.mean(axis=0)) / (arr.std(axis=0) + 1e-5)
    return torch.from_numpy(arr).to(h.device)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(16, 64), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, x):
        return self.decoder(standardize(self.encoder(x)))


data = torch.randn(2000, 16)
target = (data[:, :4].sum(1, keepdim=True) > 0).float()
model = Model().to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = nn.BCEWithLogitsLoss()
for _ in range(200):
    idx = torch.randint(0, 2000, (100,))
    loss = loss_fn(model(data[idx].to(device)), target[idx].to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
print("done")
