"""A CNN whose forward uses conv1, conv2 and conv3 once each.

expect: -
"""

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(14)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 12, 3, padding=1)
        self.conv2 = nn.Conv2d(12, 12, 3, padding=1)
        self.conv3 = nn.Conv2d(12, 12, 3, padding=1)
        self.fc = nn.Linear(12, 4)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        return self.fc(x.mean(dim=(2, 3)))


x = torch.randn(480, 1, 10, 10)
y = torch.randint(0, 4, (480,))
loader = DataLoader(TensorDataset(x, y), batch_size=24, shuffle=True)
net = Net().to(device)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
for epoch in range(4):
    for xb, yb in loader:
        opt.zero_grad()
        F.cross_entropy(net(xb.to(device)), yb.to(device)).backward()
        opt.step()
    print("epoch", epoch)
