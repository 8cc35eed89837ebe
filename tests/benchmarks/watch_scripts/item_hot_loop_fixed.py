"""Training loop that keeps loss, accuracy and gradient norm on the device and reads them once.

expect: -
"""

import torch
import torch.nn.functional as F
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(5)

x_train = torch.randn(4096, 32)
w_true = torch.randn(32, 5)
y_train = (x_train @ w_true).argmax(1)
model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 5)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
history = {"loss": [], "acc": [], "grad": []}

for _ in range(300):
    idx = torch.randint(0, 4096, (64,))
    xb, yb = x_train[idx].to(device), y_train[idx].to(device)
    logits = model(xb)
    loss = F.cross_entropy(logits, yb)
    opt.zero_grad()
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    history["loss"].append(loss.detach())
    history["acc"].append((logits.argmax(1) == yb).float().mean())
    history["grad"].append(grad_norm.detach())
history = {k: torch.stack(v).tolist() for k, v in history.items()}  # one read at the end
print(f"final loss {sum(history['loss'][-20:]) / 20:.3f} acc {sum(history['acc'][-20:]) / 20:.3f}")
