"""Small U-Net for binary segmentation of synthetic shapes, with an image-level head.

Each 32x32 image contains 1-3 random ellipses on a textured background; with
probability 0.5 one of them is replaced by an axis-aligned rectangle.  The U-Net
(two down / two up stages, BatchNorm, skip connections) predicts a foreground mask;
an auxiliary head on the bottleneck predicts whether the image contains a
rectangle, trained every step with a hand-written binary cross-entropy on sigmoid
probabilities (clamped away from 0/1).  Images and masks are generated on the fly
on the device, the forward pass runs under torch.autocast (bfloat16 on CPU),
gradients are accumulated over 2 micro-batches before each AdamW step, a cosine
schedule with linear warm-up (LambdaLR) is stepped once per optimizer step, and
Dice / aux accuracy are evaluated in eval mode under no_grad.  Bug: in the hand-written
BCE the probabilities have shape (B, 1) while the labels have shape (B,), so the
expression broadcasts to (B, B) and every prediction is trained against every label
in the batch; the auxiliary head can only learn the base rate (about 50% accuracy).

expect: broadcast
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(5)

IMG = 32


def synth_batch(b, gen):
    yy, xx = torch.meshgrid(torch.arange(IMG, device=device, dtype=torch.float32),
                            torch.arange(IMG, device=device, dtype=torch.float32), indexing="ij")
    mask = torch.zeros(b, IMG, IMG, device=device)
    has_rect = torch.rand(b, generator=gen, device=device) < 0.5
    n_shapes = torch.randint(1, 4, (b,), generator=gen, device=device)
    params = torch.rand(b, 3, 4, generator=gen, device=device)
    for s in range(3):
        cx, cy = 6 + 20 * params[:, s, 0], 6 + 20 * params[:, s, 1]
        rx, ry = 2.5 + 4 * params[:, s, 2], 2.5 + 4 * params[:, s, 3]
        dx = (xx[None] - cx[:, None, None]) / rx[:, None, None]
        dy = (yy[None] - cy[:, None, None]) / ry[:, None, None]
        ellipse = dx ** 2 + dy ** 2 <= 1
        rect = (dx.abs() <= 1) & (dy.abs() <= 1)
        shape = torch.where((has_rect & (s == 0))[:, None, None], rect, ellipse)
        active = n_shapes > s
        mask = torch.maximum(mask, (shape & active[:, None, None]).float())
    texture = 0.15 * torch.sin(xx[None] * 0.9 + torch.rand(b, 1, 1, generator=gen, device=device) * 6) \
        + 0.1 * torch.randn(b, IMG, IMG, generator=gen, device=device)
    img = 0.8 * mask + texture
    return img.unsqueeze(1), mask.unsqueeze(1), has_rect.float()


def conv_block(cin, cout):
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
    )


class TinyUNet(nn.Module):
    def __init__(self, base=8):
        super().__init__()
        self.down1 = conv_block(1, base)
        self.down2 = conv_block(base, 2 * base)
        self.mid = conv_block(2 * base, 4 * base)
        self.up2 = nn.ConvTranspose2d(4 * base, 2 * base, 2, stride=2)
        self.dec2 = conv_block(4 * base, 2 * base)
        self.up1 = nn.ConvTranspose2d(2 * base, base, 2, stride=2)
        self.dec1 = conv_block(2 * base, base)
        self.seg = nn.Conv2d(base, 1, 1)
        self.aux = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * base, 16),
                                 nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(F.max_pool2d(d1, 2))
        m = self.mid(F.max_pool2d(d2, 2))
        u2 = self.dec2(torch.cat([self.up2(m), d2], dim=1))
        u1 = self.dec1(torch.cat([self.up1(u2), d1], dim=1))
        return self.seg(u1), self.aux(m)


def dice_score(logits, target, eps=1.0):
    pred = (logits > 0).float()
    inter = (pred * target).sum(dim=(1, 2, 3))
    return ((2 * inter + eps) / (pred.sum(dim=(1, 2, 3)) + target.sum(dim=(1, 2, 3)) + eps)).mean()


def rect_bce(aux_logit, has_rect, eps=1e-6):
    p = torch.sigmoid(aux_logit).clamp(eps, 1 - eps)
    y = has_rect
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()


@torch.no_grad()
def evaluate(net, gen, n_batches=2):
    net.eval()
    dice, acc = 0.0, 0.0
    for _ in range(n_batches):
        img, mask, has_rect = synth_batch(64, gen)
        seg_logits, aux_logit = net(img)
        dice += dice_score(seg_logits.float(), mask).item()
        acc += ((aux_logit.squeeze(1) > 0).float() == has_rect).float().mean().item()
    net.train()
    return dice / n_batches, acc / n_batches


def main():
    gen = torch.Generator(device=device).manual_seed(0)
    val_gen = torch.Generator(device=device).manual_seed(1)
    net = TinyUNet().to(device)
    opt = torch.optim.AdamW(net.parameters(), lr=4e-3, weight_decay=1e-4)
    total_updates, warmup, accum = 64, 6, 2

    def lr_lambda(u):
        if u < warmup:
            return (u + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * (u - warmup) / (total_updates - warmup)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda)
    amp_dtype = torch.bfloat16 if device == "cpu" else torch.float16
    aux_weight = 0.5

    net.train()
    micro = 0
    for update in range(total_updates):
        for _ in range(accum):
            img, mask, has_rect = synth_batch(16, gen)
            with torch.autocast(device_type=device if device != "mps" else "cpu", dtype=amp_dtype,
                                enabled=device == "cpu"):
                seg_logits, aux_logit = net(img)
            seg_loss = F.binary_cross_entropy_with_logits(seg_logits.float(), mask)
            aux_loss = rect_bce(aux_logit.float(), has_rect)
            loss = (seg_loss + aux_weight * aux_loss) / accum
            loss.backward()
            micro += 1
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sched.step()
        if (update + 1) % 16 == 0:
            dice, acc = evaluate(net, val_gen)
            print(f"update {update + 1:3d}  seg {seg_loss.item():.4f}  aux {aux_loss.item():.4f}  "
                  f"val dice {dice:.3f}  val rect-acc {acc:.3f}")


if __name__ == "__main__":
    main()
