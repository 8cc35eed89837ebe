"""Synthetic stand-ins for the data sets the public scripts download: the same per-sample shape,
dtype and type (a PIL image in mode "L" and an int label, ``.data`` uint8 N x 28 x 28 and
``.targets`` int64, as torchvision's ``MNIST``), fewer samples, learnable (each class is a fixed
pattern plus noise), made in memory from a fixed seed. No file is read or downloaded.
"""

from __future__ import annotations

import torch
from PIL import Image

SIZES = {True: 3000, False: 500}  # train / test samples (MNIST: 60000 / 10000)


def _digits(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    patterns = torch.rand(10, 28, 28, generator=torch.Generator().manual_seed(7)) > 0.6
    targets = torch.randint(0, 10, (n,), generator=gen)
    noise = torch.rand(n, 28, 28, generator=gen) * 90
    data = (patterns[targets].float() * 160 + noise).clamp(0, 255).to(torch.uint8)
    return data, targets


class MNIST(torch.utils.data.Dataset):
    """``torchvision.datasets.MNIST``'s signature and items, synthetic."""

    def __init__(self, root="", train=True, transform=None, target_transform=None, download=False):
        self.train, self.transform, self.target_transform = train, transform, target_transform
        self.data, self.targets = _digits(SIZES[bool(train)], 1 if train else 2)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        img, target = Image.fromarray(self.data[index].numpy(), mode="L"), int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target


class datasets:  # noqa: N801 - stands in for ``torchvision.datasets`` where a script uses it
    MNIST = MNIST


def write_cora(path: str = "./cora", nodes: int = 2708, features: int = 1433, edges: int = 5429) -> None:
    """Cora's two files (``cora.content``: paper id, 1433 binary word features, class name;
    ``cora.cites``: cited id, citing id) with Cora's sizes and seven classes; a paper's words and
    citations lean to its class."""
    import os

    gen = torch.Generator().manual_seed(3)
    classes = ["Case_Based", "Genetic_Algorithms", "Neural_Networks", "Probabilistic_Methods",
               "Reinforcement_Learning", "Rule_Learning", "Theory"]
    labels = torch.randint(0, 7, (nodes,), generator=gen)
    topics = torch.rand(7, features, generator=gen) < 0.03
    words = (torch.rand(nodes, features, generator=gen) < 0.005) | (
        topics[labels] & (torch.rand(nodes, features, generator=gen) < 0.5))
    ids = torch.randperm(10 * nodes, generator=gen)[:nodes] + 35
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "cora.content"), "w") as out:
        for i in range(nodes):
            row = " ".join("1" if w else "0" for w in words[i].tolist())
            out.write(f"{int(ids[i])}\t{row.replace(' ', chr(9))}\t{classes[int(labels[i])]}\n")
    by_class = [torch.nonzero(labels == c).flatten() for c in range(7)]
    with open(os.path.join(path, "cora.cites"), "w") as out:
        for _ in range(edges):
            a = int(torch.randint(0, nodes, (1,), generator=gen))
            same = by_class[int(labels[a])]
            b = int(same[int(torch.randint(0, len(same), (1,), generator=gen))])
            if a != b:
                out.write(f"{int(ids[a])}\t{int(ids[b])}\n")


def write_text_corpus(path: str = "./data/wikitext-2", tokens: tuple = (30000, 3000, 3000)) -> None:
    """``train.txt``, ``valid.txt``, ``test.txt`` in WikiText-2's layout (lines of space-separated
    words), from a 2,000-word vocabulary with a first-order Markov structure a model can learn."""
    import os

    gen = torch.Generator().manual_seed(4)
    vocab = [f"w{i}" for i in range(2000)]
    nxt = torch.randint(0, 2000, (2000, 8), generator=gen)
    os.makedirs(path, exist_ok=True)
    for name, n in zip(("train", "valid", "test"), tokens):
        word, lines, line = 0, [], []
        choices = torch.randint(0, 8, (n,), generator=gen).tolist()
        for c in choices:
            word = int(nxt[word, c])
            line.append(vocab[word])
            if len(line) == 20:
                lines.append(" " + " ".join(line) + " \n")
                line = []
        with open(os.path.join(path, f"{name}.txt"), "w") as out:
            out.writelines(lines)


def write_bsds(dest: str = "dataset", train: int = 40, test: int = 10) -> None:
    """BSDS300's folder layout (``BSDS300/images/train`` and ``test``, 481 x 321 colour JPEGs),
    fewer images, each a smooth random pattern."""
    import os

    gen = torch.Generator().manual_seed(5)
    for split, n in (("train", train), ("test", test)):
        folder = os.path.join(dest, "BSDS300", "images", split)
        os.makedirs(folder, exist_ok=True)
        for i in range(n):
            low = torch.rand(3, 11, 16, generator=gen)
            img = torch.nn.functional.interpolate(low[None], size=(321, 481), mode="bilinear")[0]
            pixels = (img * 255).to(torch.uint8).permute(1, 2, 0).numpy()
            Image.fromarray(pixels).save(os.path.join(folder, f"{i}.jpg"))
