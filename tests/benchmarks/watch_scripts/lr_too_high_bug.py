"""Linear regression on unnormalised features with SGD at lr=0.05: the run diverges to inf/NaN.

expect: non-finite, update ratio, growing grads
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(13)

area = torch.rand(1000, 1) * 200 + 20
rooms = torch.randint(1, 6, (1000, 1)).float()
features = torch.cat([area, rooms], dim=1)
price = 3.0 * area + 10.0 * rooms + torch.randn(1000, 1)
model = nn.Linear(2, 1).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
features, price = features.to(device), price.to(device)
for epoch in range(100):
    for i in range(0, 1000, 100):
        loss = nn.functional.mse_loss(model(features[i : i + 100]), price[i : i + 100])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if epoch % 25 == 0:
        print(epoch, loss.item())
