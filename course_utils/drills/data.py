"""Data bugs (lesson 07): no shuffle on class-sorted data, statistics leaked from the test split,
normalisation constants for another kind of data."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

SHUFFLE_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    centers = torch.tensor([[1.0, 0.0], [-0.5, 0.87], [-0.5, -0.87]])
    y = torch.arange(3).repeat_interleave(200)          # the file is sorted: 0s, then 1s, then 2s
    x = centers[y] + 1.2 * torch.randn(600, 2)
    loader = DataLoader(TensorDataset(x, y), batch_size=50)   # shuffle defaults to False
    model = nn.Linear(2, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    batch_classes = []                                  # (instrumentation)
    for epoch in range(2):
        for xb, yb in loader:
            batch_classes.append(yb.unique().numel())
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
""")

SHUFFLE_FIXED = SHUFFLE_BUGGY.replace(
    "loader = DataLoader(TensorDataset(x, y), batch_size=50)   # shuffle defaults to False\n",
    "loader = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True,\n"
    "                    generator=torch.Generator().manual_seed(0))\n")


def _shuffle_measure(run: CodeRun) -> Symptom:
    import torch

    with torch.no_grad():
        pred = run["model"](run["x"]).argmax(1)
    acc = (pred == run["y"]).float().mean().item()
    classes = run["centers"].shape[0]
    counts = torch.bincount(pred, minlength=classes).tolist()
    truth = torch.bincount(run["y"], minlength=classes).tolist()
    data = f"{truth[0]} each" if len(set(truth)) == 1 else f"{truth}"
    single = sum(c == 1 for c in run["batch_classes"])
    total = len(run["batch_classes"])
    return Symptom(f"{single} of {total} batches hold a single class; accuracy {acc:.2f}; "
                   f"predictions per class {counts} ({data} in the data)", single > total / 2,
                   {"single_class_batches": single, "accuracy": acc, "predicted": counts})


SHUFFLE = Drill(
    id="data.no_shuffle",
    category="data",
    title="No shuffle on class-sorted data",
    buggy_code=SHUFFLE_BUGGY,
    fixed_code=SHUFFLE_FIXED,
    measure=_shuffle_measure,
    question=shuffled_question(
        "data.no_shuffle",
        "Training runs, yet the model favours whichever class it saw last, and the loss curve steps up at "
        "each epoch's start. What is missing?",
        "shuffle=True in the training DataLoader, so batches mix the classes",
        ("drop_last=True, so the last partial batch is skipped",
         "num_workers > 0, so batches load in parallel",
         "A larger batch, so that each batch sees more classes"),
        "DataLoader's shuffle defaults to False; sorted data then gives single-class batches"),
    hints=("Look at the labels of a few consecutive batches.",
           "DataLoader(..., shuffle=True) for training; keep evaluation loaders unshuffled."),
    explanation="DataLoader does not shuffle unless asked (shuffle defaults to False). On data "
                "sorted by class every batch holds one class, so the gradient of each stretch "
                "pulls the model towards that class and the end of the epoch wins: predictions "
                "pile up on the class seen last. Shuffle the training loader (with a seeded "
                "generator for reproducibility).",
    source="R65 in references.md (DataLoader: shuffle defaults to False)",
    variants=(
        Variant("4 classes of 150",
                {"loader": "train_loader", "model": "clf"},
                (("torch.tensor([[1.0, 0.0], [-0.5, 0.87], [-0.5, -0.87]])",
                  "torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])"),
                 ("torch.arange(3).repeat_interleave(200)", "torch.arange(4).repeat_interleave(150)"),
                 ("nn.Linear(2, 3)", "nn.Linear(2, 4)"))),
        Variant("batches of 40, three epochs",
                {"x": "points", "y": "labels", "optimizer": "opt"},
                (("batch_size=50", "batch_size=40"), ("range(2)", "range(3)"))),
        Variant("labels drawn at random, then sorted",
                {"x": "features", "y": "targets", "batch_classes": "seen"},
                (("torch.arange(3).repeat_interleave(200)", "torch.randint(0, 3, (600,)).sort().values"),
                 ("lr=1.0)", "lr=0.5)"))),
    ),
)

LEAK_BUGGY = code("""
    import torch

    torch.manual_seed(0)
    data = torch.randn(1000, 3) * 4 + 10
    data[800:] += 3                          # the last rows (our test split) come from later
    mean, std = data.mean(0), data.std(0)    # statistics of ALL rows
    normed = (data - mean) / std
    train, test = normed[:800], normed[800:]
""")

LEAK_FIXED = code("""
    import torch

    torch.manual_seed(0)
    data = torch.randn(1000, 3) * 4 + 10
    data[800:] += 3                          # the last rows (our test split) come from later
    train_raw, test_raw = data[:800], data[800:]          # split first
    mean, std = train_raw.mean(0), train_raw.std(0)       # statistics of the training rows only
    train, test = (train_raw - mean) / std, (test_raw - mean) / std
""")


def _leak_measure(run: CodeRun) -> Symptom:
    train, test = run["train"], run["test"]
    train_mean = train.mean(0).abs().max().item()
    test_shift = test.mean(0).mean().item()
    leaked = train_mean > 1e-3
    shown = round(train.mean(0).mean().item(), 2) + 0.0  # no "-0.00"
    return Symptom(f"training features' mean is {shown:+.2f} (0 when the "
                   f"statistics come from the training rows); the test split looks shifted by "
                   f"{test_shift:+.2f} std", leaked,
                   {"train_mean": train_mean, "test_shift": test_shift})


LEAK = Drill(
    id="data.test_statistics_leak",
    category="data",
    title="Normalisation statistics from the test split",
    buggy_code=LEAK_BUGGY,
    fixed_code=LEAK_FIXED,
    measure=_leak_measure,
    question=shuffled_question(
        "data.test_statistics_leak",
        "Validation looks better than production. What is wrong with this preprocessing?",
        "The normalisation statistics also include the test rows",
        ("Nothing, since more rows give better statistics",
         "std() should use unbiased=False for large datasets",
         "Each batch should be normalised by its own statistics"),
        "fit every preprocessing statistic on the training split only, then apply it unchanged "
        "to validation and test"),
    hints=("Which rows do mean and std see?",
           "Split first; fit mean and std on the training rows; apply them to both splits."),
    explanation="Statistics fitted before the split include the test rows: the training inputs "
                "then depend on the test data, and a test split that drifted looks closer to "
                "training than it is, so evaluation flatters the model. Split first, fit on "
                "train, apply to everything else.",
    source="lesson 07; a classic interview question (fit preprocessing on the training split only)",
    exercise="07.split_normalise",
    variants=(
        Variant("600 rows of 5 features, the last 120 held out",
                {"data": "table", "normed": "scaled"},
                (("torch.randn(1000, 3) * 4 + 10", "torch.randn(600, 5) * 2 - 3"),
                 ("data[800:] += 3", "data[480:] += 2"),
                 ("normed[:800], normed[800:]", "normed[:480], normed[480:]"),
                 ("data[:800], data[800:]", "data[:480], data[480:]"))),
        Variant("torch.std_mean",
                {"data": "readings", "train": "fit_rows", "test": "eval_rows"},
                (("mean, std = data.mean(0), data.std(0)", "std, mean = torch.std_mean(data, dim=0)"),
                 ("mean, std = train_raw.mean(0), train_raw.std(0)",
                  "std, mean = torch.std_mean(train_raw, dim=0)"))),
        Variant("a drifting sensor (a random walk)",
                {"data": "signal", "normed": "standard"},
                (("torch.randn(1000, 3) * 4 + 10", "torch.randn(1000, 3).cumsum(0) * 0.2 + 10"),
                 ("data[800:] += 3", "data[800:] += 1"))),
    ),
)

CONSTANTS_BUGGY = code("""
    import torch

    torch.manual_seed(0)
    images = torch.randint(0, 256, (16, 3, 8, 8), dtype=torch.uint8)   # decoded pixels, 0..255
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)        # ImageNet's constants,
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)         # meant for pixels in 0..1
    x = (images.float() - mean) / std
""")

CONSTANTS_FIXED = CONSTANTS_BUGGY.replace("x = (images.float() - mean) / std",
                                          "x = (images.float() / 255 - mean) / std")


def _constants_measure(run: CodeRun) -> Symptom:
    x = run["x"]
    m, s = x.mean().item(), x.std().item()
    buggy = abs(m) > 3 or s > 3
    return Symptom(f"normalised inputs: mean {m:.1f}, std {s:.1f} (should be near 0 and 1)",
                   buggy, {"mean": m, "std": s})


CONSTANTS = Drill(
    id="data.wrong_normalisation_constants",
    category="data",
    title="Normalisation constants for another scale",
    buggy_code=CONSTANTS_BUGGY,
    fixed_code=CONSTANTS_FIXED,
    measure=_constants_measure,
    question=shuffled_question(
        "data.wrong_normalisation_constants",
        "The network trains slowly and its first layer saturates. What is wrong with the input "
        "normalisation?",
        "The constants suit pixels in [0, 1], but these run 0..255",
        ("uint8 images must be normalised per image, not per channel",
         "The std must be divided out first, then the mean subtracted",
         "The constants must be computed on the test split"),
        "normalisation constants belong to a data scale: convert to [0, 1] first or compute "
        "the constants from your own training data"),
    hints=("Print x.mean() and x.std() after normalising.",
           "Divide by 255 first, or compute mean and std from your own training set."),
    explanation="The ImageNet mean and std are for pixels scaled to [0, 1]. Applied to 0..255 "
                "values they leave the inputs in the hundreds, so the first "
                "layer saturates and training crawls. Scale to [0, 1] first, or compute the "
                "constants from your own training split.",
    source="R67 in references.md (the ImageNet mean and std are for pixels scaled to [0, 1])",
    variants=(
        Variant("4 images of 32 x 32",
                {"images": "pixels", "x": "inputs"},
                (("(16, 3, 8, 8)", "(4, 3, 32, 32)"),)),
        Variant("channels-last pixels, permuted",
                {"images": "frames", "x": "batch"},
                (("torch.randint(0, 256, (16, 3, 8, 8), dtype=torch.uint8)",
                  "torch.randint(0, 256, (6, 8, 8, 3), dtype=torch.uint8).permute(0, 3, 1, 2)"),)),
        Variant("a normalize function, constants broadcast with [:, None, None]",
                {"images": "photos"},
                (("torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)",
                  "torch.tensor([0.485, 0.456, 0.406])[:, None, None]"),
                 ("torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)",
                  "torch.tensor([0.229, 0.224, 0.225])[:, None, None]"),
                 ("x = (images.float() - mean) / std",
                  "def normalize(t):\n    return (t - mean) / std\nx = normalize(images.float())"),
                 ("x = (images.float() / 255 - mean) / std",
                  "def normalize(t):\n    return (t - mean) / std\nx = normalize(images.float() / 255)"))),
    ),
)

DRILLS = (SHUFFLE, LEAK, CONSTANTS)
