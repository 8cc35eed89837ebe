"""House-price style regression with ReduceLROnPlateau: the scheduler is fed each batch's training
loss (noisy), so it sees a "plateau" every few batches and halves the learning rate to nothing.

expect: lr collapse
"""

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(23)

x_all = torch.randn(6000, 13)
y_all = (x_all[:, :4].sum(dim=1, keepdim=True) + 0.3 * x_all[:, 4:5] ** 2 + 0.5 * torch.randn(6000, 1))
split = 5000
train_loader = DataLoader(TensorDataset(x_all[:split], y_all[:split]), batch_size=32, shuffle=True)
val_x, val_y = x_all[split:].to(device), y_all[split:].to(device)

model = nn.Sequential(nn.Linear(13, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=5)
criterion = nn.MSELoss()

for epoch in range(6):
    model.train()
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        scheduler.step(loss.item())
    model.eval()
    with torch.no_grad():
        val_loss = criterion(model(val_x), val_y).item()
    print(f"epoch {epoch}: val {val_loss:.4f} lr {optimizer.param_groups[0]['lr']:.2e}")
