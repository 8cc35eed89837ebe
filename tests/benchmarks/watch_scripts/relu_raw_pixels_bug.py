"""A small CNN on 8-bit images fed as raw 0-255 values (the division by 255 is missing) with SGD
at a learning rate tuned for inputs in [0, 1]. The first updates are hundreds of times too large:
they push most convolution units' pre-activations below zero for every image, those ReLUs pass no
gradient from then on, and the network is left with a handful of live channels. Written from the
reports that a learning rate too high kills ReLU units (dangitstam/topic-rnn#9, 'smaller learning
rate to prevent dying ReLU'; the keras-team/keras#3425 thread, a CNN whose accuracy drops to zero
and stays there) and the dead-ReLU detector proposed in keras-team/keras#7057.

expect: dead units
"""

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(5)

# three classes of 16x16 glyphs: a bright bar at a class-dependent angle on a noisy background
def make(n):
    y = torch.randint(0, 3, (n,))
    img = torch.randint(0, 60, (n, 1, 16, 16)).float()
    for i in range(n):
        if y[i] == 0:
            img[i, 0, 7:9, :] += 180
        elif y[i] == 1:
            img[i, 0, :, 7:9] += 180
        else:
            img[i, 0].diagonal().add_(180)
    return img.clamp(0, 255).to(torch.uint8), y

images, labels = make(3000)

model = nn.Sequential(
    nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(),
    nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(32 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, 3),
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

for epoch in range(3):
    perm = torch.randperm(len(images))
    correct = 0
    for i in range(0, len(images), 50):
        idx = perm[i:i + 50]
        x = images[idx].float().to(device)  # raw 0-255: the / 255 is missing
        y = labels[idx].to(device)
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (out.argmax(1) == y).sum().item()
    print(f"epoch {epoch}: loss {loss.item():.4f} train acc {correct / len(images):.3f}")
