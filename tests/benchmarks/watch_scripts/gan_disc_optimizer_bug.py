"""A small GAN on a 2-D ring of Gaussians: the discriminator's optimizer was copy-pasted from the
generator's and still lists the generator's parameters.

expect: not in optimizer
"""

import math

import torch
from torch import nn

device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
torch.manual_seed(21)

LATENT = 8


def real_batch(n):
    angle = torch.randint(0, 8, (n,)) * (2 * math.pi / 8)
    centers = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1) * 2.0
    return centers + 0.05 * torch.randn(n, 2)


generator = nn.Sequential(
    nn.Linear(LATENT, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2)
).to(device)
discriminator = nn.Sequential(
    nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
).to(device)

opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()

for it in range(300):
    real = real_batch(128).to(device)
    z = torch.randn(128, LATENT, device=device)
    fake = generator(z)

    # discriminator step
    opt_d.zero_grad()
    d_real = discriminator(real)
    d_fake = discriminator(fake.detach())
    loss_d = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
    loss_d.backward()
    opt_d.step()

    # generator step
    opt_g.zero_grad()
    d_out = discriminator(fake)
    loss_g = bce(d_out, torch.ones_like(d_out))
    loss_g.backward()
    opt_g.step()

    if it % 50 == 0:
        print(f"iter {it}: loss_d {loss_d.item():.3f} loss_g {loss_g.item():.3f}")
