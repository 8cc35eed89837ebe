"""Feature visualisation: a forward hook keeps only the latest activation, detached.

expect: -
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(8)

activations = []


def save_activation(module, inputs, output):
    activations[:] = [output.detach()]  # the latest only


model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)).to(
    device
)
model[2].register_forward_hook(save_activation)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x_all, y_all = torch.randn(4096, 64), torch.randint(0, 10, (4096,))
for _ in range(300):
    idx = torch.randint(0, 4096, (128,))
    loss = nn.functional.cross_entropy(model(x_all[idx].to(device)), y_all[idx].to(device))
    opt.zero_grad()
    loss.backward()
    opt.step()
print(len(activations), "activations kept")
