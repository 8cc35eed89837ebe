"""Small U-Net for binary segmentation of synthetic blobs ("cells") in noisy microscopy-like images.

Images are 32x32 with 1-4 random ellipses of varying brightness on a smooth background gradient
plus Gaussian noise; the target is the foreground mask. The network is a two-level U-Net
(conv-BN-ReLU double convs, max-pool down, transposed-conv up, skip concatenations). Loss is BCE +
soft Dice. Training uses SGD with Nesterov momentum, gradient accumulation over 2 micro-batches,
gradient-norm clipping (the pre-clip norm is logged), and reports validation IoU per epoch.
Bug: gradients are only cleared once per epoch, before the micro-batch loop, so after each
optimizer step the next accumulation adds onto all earlier gradients of the epoch and the
gradient norm keeps growing within the epoch.

expect: missing zero_grad, growing grads
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 3
np.random.seed(SEED)
torch.manual_seed(SEED)
if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")

H = W = 32


def synth_batch(n):
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    imgs = np.zeros((n, 1, H, W), np.float32)
    masks = np.zeros((n, 1, H, W), np.float32)
    for k in range(n):
        bg = 0.3 * (np.random.rand() * xx / W + np.random.rand() * yy / H)
        m = np.zeros((H, W), bool)
        for _ in range(np.random.randint(1, 5)):
            cy, cx = np.random.uniform(4, H - 4, 2)
            ry, rx = np.random.uniform(2, 6, 2)
            m |= ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        imgs[k, 0] = bg + m * np.random.uniform(0.5, 1.0) + 0.25 * np.random.randn(H, W)
        masks[k, 0] = m
    return torch.from_numpy(imgs), torch.from_numpy(masks)


def double_conv(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


class MiniUNet(nn.Module):
    def __init__(self, base=6):
        super().__init__()
        self.enc1 = double_conv(1, base)
        self.enc2 = double_conv(base, base * 2)
        self.bottleneck = double_conv(base * 2, base * 4)
        self.up2 = nn.ConvTranspose2d(base * 4, base * 2, 2, stride=2)
        self.dec2 = double_conv(base * 4, base * 2)
        self.up1 = nn.ConvTranspose2d(base * 2, base, 2, stride=2)
        self.dec1 = double_conv(base * 2, base)
        self.out = nn.Conv2d(base, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        b = self.bottleneck(F.max_pool2d(e2, 2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], 1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], 1))
        return self.out(d1)


def dice_bce(logits, target, eps=1.0):
    bce = F.binary_cross_entropy_with_logits(logits, target)
    prob = torch.sigmoid(logits)
    inter = (prob * target).sum((1, 2, 3))
    dice = (2 * inter + eps) / (prob.sum((1, 2, 3)) + target.sum((1, 2, 3)) + eps)
    return bce + (1 - dice).mean()


@torch.no_grad()
def evaluate(net, x, y):
    net.eval()
    pred = (net(x) > 0).float()
    inter = (pred * y).sum((1, 2, 3))
    union = ((pred + y) > 0).float().sum((1, 2, 3))
    return ((inter + 1e-6) / (union + 1e-6)).mean().item()


x_tr, y_tr = synth_batch(448)
x_va, y_va = synth_batch(128)
x_va, y_va = x_va.to(device), y_va.to(device)

net = MiniUNet().to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
ACCUM, MICRO_BS, EPOCHS = 2, 8, 4

for epoch in range(EPOCHS):
    net.train()
    perm = torch.randperm(len(x_tr))
    n_micro = len(x_tr) // MICRO_BS
    opt.zero_grad()
    for it in range(n_micro):
        idx = perm[it * MICRO_BS:(it + 1) * MICRO_BS]
        xb, yb = x_tr[idx].to(device, non_blocking=True), y_tr[idx].to(device, non_blocking=True)
        loss = dice_bce(net(xb), yb) / ACCUM
        loss.backward()
        if (it + 1) % ACCUM == 0:
            gnorm = nn.utils.clip_grad_norm_(net.parameters(), max_norm=5.0)
            opt.step()
            if (it + 1) % 16 == 0:
                print(f"epoch {epoch} micro-step {it + 1:3d} loss {loss.item() * ACCUM:.4f} "
                      f"grad-norm {gnorm.item():.3f}")
    print(f"epoch {epoch} val IoU {evaluate(net, x_va, y_va):.4f}")
