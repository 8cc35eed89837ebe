"""Image-text retrieval style training (VSE++-like): an image encoder MLP with batch norm and
dropout and a text encoder (EmbeddingBag) map pairs into a joint space, trained with a hinge
triplet loss on the hardest negatives in the batch; validation recall@1 runs every 10 iterations
in the middle of an epoch, in eval mode under no_grad. Bug: validate() switches the encoders to
eval() and training resumes without switching them back, so after the first validation the
dropout is off and batch norm uses (and no longer updates) its running statistics for the rest of
the epoch; model.train() is called only at the start of each epoch.
Written from: https://github.com/fartashf/vsepp/issues/4
expect: eval mode
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
VOCAB = 300


def pairs(n, gen):
    concept = torch.randint(0, 20, (n,), generator=gen)
    images = torch.randn(20, 48, generator=torch.Generator().manual_seed(1))[concept] + 0.5 * torch.randn(n, 48, generator=gen)
    words = torch.randint(20, VOCAB, (n, 6), generator=gen)
    words[:, 0] = concept
    return images, words


class ImageEnc(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(48, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 64))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class TextEnc(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.EmbeddingBag(VOCAB, 64)
        self.proj = nn.Linear(64, 64)

    def forward(self, words):
        return F.normalize(self.proj(self.embed(words)), dim=-1)


def triplet_hardest(im, tx, margin=0.2):
    scores = im @ tx.t()
    diag = scores.diag()[:, None]
    mask = torch.eye(len(im), dtype=torch.bool, device=im.device)
    cost_t = (margin + scores - diag).clamp(min=0).masked_fill(mask, 0)
    cost_i = (margin + scores - diag.t()).clamp(min=0).masked_fill(mask, 0)
    return cost_t.max(1).values.mean() + cost_i.max(0).values.mean()


def validate(img_enc, txt_enc, images, words):
    img_enc.eval()
    txt_enc.eval()
    with torch.no_grad():
        scores = img_enc(images.to(device)) @ txt_enc(words.to(device)).t()
        return (scores.argmax(1).cpu() == torch.arange(len(images))).float().mean().item()


def main():
    gen = torch.Generator().manual_seed(18)
    images, words = pairs(1600, gen)
    v_images, v_words = pairs(200, gen)
    img_enc, txt_enc = ImageEnc().to(device), TextEnc().to(device)
    optimizer = torch.optim.Adam(list(img_enc.parameters()) + list(txt_enc.parameters()), lr=2e-3)
    iteration = 0
    for epoch in range(2):
        img_enc.train()
        txt_enc.train()
        perm = torch.randperm(len(images))
        for i in range(0, len(images), 64):
            idx = perm[i: i + 64]
            optimizer.zero_grad()
            loss = triplet_hardest(img_enc(images[idx].to(device)), txt_enc(words[idx].to(device)))
            loss.backward()
            optimizer.step()
            iteration += 1
            if iteration % 10 == 0:
                print(f"iter {iteration} loss {loss.item():.4f} R@1 {validate(img_enc, txt_enc, v_images, v_words):.3f}")


if __name__ == "__main__":
    main()
