"""K-fold cross-validation: the model is re-created for each fold, the optimizer is not.

expect: stale optimizer, not in optimizer
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(15)

X = torch.randn(600, 10)
Y = (X[:, 0] * X[:, 1] > 0).float().unsqueeze(1)
folds = torch.arange(600) % 3


def make_model():
    return nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1)).to(device)


model = make_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for fold in range(3):
    model = make_model()  # fresh weights for each fold
    train_x, train_y = X[folds != fold].to(device), Y[folds != fold].to(device)
    for _ in range(60):
        loss = nn.functional.binary_cross_entropy_with_logits(model(train_x), train_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        model.eval()
        acc = ((model(X[folds == fold].to(device)) > 0).float() == Y[folds == fold].to(device)).float().mean()
    print(f"fold {fold}: acc {acc.item():.3f}")
