"""Small convolutional classifier for synthetic 20x20 grey-scale "texture" images
(horizontal stripes, vertical stripes, diagonal stripes, checkerboards and blobs, with
random phase, contrast and Gaussian noise). The network uses Conv-BatchNorm-ReLU blocks
and a dropout-regularised head; training uses SGD with Nesterov momentum, a cosine
schedule stepped once per epoch, random flips as on-device augmentation, validation after
every epoch with early stopping on validation accuracy, and the best weights kept in an
in-memory checkpoint dict that is restored for the final held-out test evaluation.
Bug: evaluate() runs under torch.no_grad() but never calls net.eval(), so validation and
test forwards run with dropout active and BatchNorm using (and updating) batch statistics;
the reported accuracies are noisy and too low, and early stopping picks on noise.

expect: train mode in eval
"""
import copy

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 0
torch.manual_seed(SEED)
np.random.seed(SEED)
device = torch.device("cuda" if torch.cuda.is_available()
                      else "mps" if torch.backends.mps.is_available() else "cpu")

IMG = 20
N_CLASSES = 5


def render(n, rng):
    yy, xx = np.mgrid[0:IMG, 0:IMG].astype(np.float32)
    labels = rng.integers(0, N_CLASSES, size=n)
    imgs = np.empty((n, 1, IMG, IMG), dtype=np.float32)
    for k, c in enumerate(labels):
        freq = rng.uniform(0.5, 1.2)
        phase = rng.uniform(0, 2 * np.pi)
        amp = rng.uniform(0.4, 1.0)
        if c == 0:
            pat = np.sin(freq * yy + phase)
        elif c == 1:
            pat = np.sin(freq * xx + phase)
        elif c == 2:
            pat = np.sin(freq * (xx + yy) / 1.4 + phase)
        elif c == 3:
            pat = np.sign(np.sin(freq * xx + phase) * np.sin(freq * yy + phase))
        else:
            cx, cy = rng.uniform(4, IMG - 4, size=2)
            pat = np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / rng.uniform(6, 20)) * 2 - 0.5
        imgs[k, 0] = amp * pat + rng.normal(0, 0.9, size=(IMG, IMG))
    return torch.from_numpy(imgs), torch.from_numpy(labels).long()


rng = np.random.default_rng(SEED)
x_train, y_train = render(1024, rng)
x_val, y_val = render(384, rng)
x_test, y_test = render(512, rng)
x_train, y_train = x_train.to(device), y_train.to(device)
x_val, y_val = x_val.to(device), y_val.to(device)
x_test, y_test = x_test.to(device), y_test.to(device)


def conv_block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class TextureNet(nn.Module):
    def __init__(self, n_classes=N_CLASSES, width=8, p_drop=0.5):
        super().__init__()
        self.features = nn.Sequential(
            conv_block(1, width), nn.MaxPool2d(2),
            conv_block(width, 2 * width), nn.MaxPool2d(2),
            conv_block(2 * width, 2 * width),
        )
        self.head = nn.Sequential(
            nn.Flatten(),
            nn.Dropout(p_drop),
            nn.Linear(2 * width * 5 * 5, 64),
            nn.BatchNorm1d(64),
            nn.ReLU(inplace=True),
            nn.Dropout(p_drop),
            nn.Linear(64, n_classes),
        )

    def forward(self, x):
        return self.head(self.features(x))


model = TextureNet().to(device)
EPOCHS = 10
BATCH = 64
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                            weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)


def augment(x):
    flip_h = torch.rand(x.size(0), 1, 1, 1, device=x.device) < 0.5
    flip_v = torch.rand(x.size(0), 1, 1, 1, device=x.device) < 0.5
    x = torch.where(flip_h, x.flip(3), x)
    x = torch.where(flip_v, x.flip(2), x)
    return x


def evaluate(net, xs, ys, batch_size=32):
    correct = torch.zeros((), device=device)
    loss_sum = torch.zeros((), device=device)
    with torch.no_grad():
        for i in range(0, xs.size(0), batch_size):
            xb, yb = xs[i:i + batch_size], ys[i:i + batch_size]
            logits = net(xb)
            loss_sum += F.cross_entropy(logits, yb, reduction="sum")
            correct += (logits.argmax(1) == yb).sum()
    n = xs.size(0)
    return loss_sum.item() / n, correct.item() / n


best = {"acc": -1.0, "epoch": -1, "state": None}
patience, bad_epochs = 4, 0
for epoch in range(EPOCHS):
    model.train()
    perm = torch.randperm(x_train.size(0), device=device)
    running = torch.zeros((), device=device)
    n_batches = 0
    for i in range(0, x_train.size(0), BATCH):
        idx = perm[i:i + BATCH]
        xb, yb = augment(x_train[idx]), y_train[idx]
        logits = model(xb)
        loss = F.cross_entropy(logits, yb, label_smoothing=0.05)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.detach()
        n_batches += 1
    scheduler.step()

    val_loss, val_acc = evaluate(model, x_val, y_val)
    print(f"epoch {epoch + 1:2d}  train_loss {running.item() / n_batches:.4f}  "
          f"val_loss {val_loss:.4f}  val_acc {val_acc:.3f}  lr {scheduler.get_last_lr()[0]:.4f}")
    if val_acc > best["acc"]:
        best = {"acc": val_acc, "epoch": epoch + 1, "state": copy.deepcopy(model.state_dict())}
        bad_epochs = 0
    else:
        bad_epochs += 1
        if bad_epochs >= patience:
            print(f"early stopping at epoch {epoch + 1}")
            break

model.load_state_dict(best["state"])
test_loss, test_acc = evaluate(model, x_test, y_test)
print(f"best epoch {best['epoch']}  val_acc {best['acc']:.3f}  test_loss {test_loss:.4f}  test_acc {test_acc:.3f}")
