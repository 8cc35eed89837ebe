"""Data-loading bugs (lesson 07): a random generator copied into every DataLoader worker, and a
loaded checkpoint validated in training mode."""

from __future__ import annotations

import os
import sys
import tempfile
import types
import warnings

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- one random generator copied into every worker -------------------------------------------------

WORKERS_BUGGY = code("""
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Jittered(Dataset):
        def __init__(self, n):
            self.signal = torch.linspace(0, 1, n)
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return len(self.signal)

        def __getitem__(self, i):
            shift = float(self.rng.normal(0, 0.1))
            return self.signal[i] + shift, shift

    if __name__ == "__main__":
        torch.manual_seed(0)
        loader = DataLoader(Jittered(16), batch_size=4, num_workers=2)
        shifts = []
        for epoch in range(2):
            for x, s in loader:
                shifts += s.tolist()
""")

WORKERS_FIXED = WORKERS_BUGGY.replace(
    "import DataLoader, Dataset\n", "import DataLoader, Dataset, get_worker_info\n").replace(
    "\nif __name__ == \"__main__\":\n",
    "\ndef reseed(worker_id):\n"
    "    info = get_worker_info()                 # each worker, each epoch: its own seed\n"
    "    info.dataset.rng = np.random.default_rng(info.seed)\n"
    "\nif __name__ == \"__main__\":\n").replace(
    "num_workers=2)", "num_workers=2, worker_init_fn=reseed)")


def run_as_main(source: str, name: str) -> CodeRun:
    """Run ``source`` as the ``__main__`` module of a temporary file: DataLoader workers started
    with "spawn" (the default on macOS and Windows) import that file to find the classes the
    code defines; workers started with "fork" (Linux) simply inherit them."""
    saved = sys.modules["__main__"]
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"drill_{name.replace('.', '_')}.py")
        with open(path, "w") as f:
            f.write(source)
        module = types.ModuleType("__main__")
        module.__file__ = path
        sys.modules["__main__"] = module
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - course code
                error = None
            except Exception as err:  # noqa: BLE001 - the error is part of the symptom
                # without its traceback: the frames it holds would keep a broken loop's DataLoader
                # iterator alive, and the next run's forked workers would inherit its queues
                error = err.with_traceback(None)
            finally:
                sys.modules["__main__"] = saved
    return CodeRun(module.__dict__, error, tuple(str(w.message) for w in caught), source)


def _workers_measure(run: CodeRun) -> Symptom:
    if run.error is not None:
        return Symptom(f"the loader raised {run.error_text}", True, error=run.error_text)
    shifts = run["shifts"]
    distinct = len({round(s, 12) for s in shifts})
    repeats = _replayed_batches(shifts, run["loader"].batch_size)
    return Symptom(f"{len(shifts)} random shifts drawn (2 workers, 2 epochs): {distinct} distinct "
                   f"values; {repeats} batches replay an earlier batch's shifts",
                   distinct < len(shifts) or repeats > 0,
                   {"drawn": len(shifts), "distinct": distinct, "replayed": repeats})


def _replayed_batches(shifts: list[float], size: int, within: float = 0.01) -> int:
    """How many batches repeat an earlier batch's shifts, each to within ``within`` (a stream
    replayed with a little noise added on top is still a replay; for independent draws with
    standard deviation 0.1 that all ``size`` lie so close is a chance below 1e-5 per pair)."""
    batches = [shifts[i:i + size] for i in range(0, len(shifts), size)]
    return sum(any(len(a) == len(b) and all(abs(u - v) < within for u, v in zip(a, b, strict=True))
                   for a in batches[:k]) for k, b in enumerate(batches))


WORKERS = Drill(
    id="data.worker_rng_copies",
    category="data",
    title="Every DataLoader worker repeats the same random augmentation",
    buggy_code=WORKERS_BUGGY,
    fixed_code=WORKERS_FIXED,
    measure=_workers_measure,
    runner=run_as_main,
    question=shuffled_question(
        "data.worker_rng_copies",
        "The random shift should differ for every sample of every epoch. With num_workers=2, "
        "how many different shifts do these two epochs produce?",
        "A quarter: every worker replays one identical stream per epoch",
        ("All 32, since PyTorch 1.9 seeds every worker's RNGs apart",
         "Half, the two workers share one generator and take turns",
         "All 32, but only with shuffle=True, in order they repeat"),
        "the generator is an object inside the Dataset; each worker gets a copy in the same "
        "state, and the main process's copy never advances"),
    hints=("Print the shifts of batch 1 and batch 2: different workers made them.",
           "Which random generators does PyTorch seed per worker, and is self.rng one of them?"),
    explanation="Each DataLoader worker gets its own copy of the Dataset, generator included, in "
                "the state it had in the main process. So both workers draw the same numbers, "
                "and since the main process's copy never advances, every epoch starts again "
                "from there. PyTorch seeds Python's random module, torch and numpy's legacy "
                "global generator differently in each worker (since 1.9), but a Generator or "
                "random.Random object the Dataset made itself is a plain object it does not "
                "touch. Reseed it in a worker_init_fn from get_worker_info().seed, which differs "
                "per worker and per epoch, or draw from torch's own generator.",
    source="R65 in references.md (randomness in multi-process data loading; "
           "torch/utils/data/_utils/worker.py in 2.13 seeds random, torch and np.random per worker)",
    variants=(
        Variant("a random.Random jitter",
                {"Jittered": "Wobble", "shifts": "offsets", "shift": "offset"},
                (("import numpy as np\n", "import random\n"),
                 ("np.random.default_rng(0)", "random.Random(0)"),
                 ("self.rng.normal(0, 0.1)", "self.rng.gauss(0, 0.1)"),
                 ("np.random.default_rng(info.seed)", "random.Random(info.seed)"))),
        Variant("a torch.Generator in the dataset",
                {"Jittered": "NoisyRamp", "signal": "ramp"},
                (("import numpy as np\n", ""),
                 ("np.random.default_rng(0)", "torch.Generator().manual_seed(0)"),
                 ("float(self.rng.normal(0, 0.1))",
                  "0.1 * torch.randn((), generator=self.rng).item()"),
                 ("np.random.default_rng(info.seed)",
                  "torch.Generator().manual_seed(info.seed)"))),
        Variant("20 samples in batches of 5",
                {"loader": "batches", "x": "sample", "s": "noise", "epoch": "ep"},
                (("Jittered(16), batch_size=4", "Jittered(20), batch_size=5"),
                 ("self.rng.normal(0, 0.1)", "self.rng.uniform(-0.2, 0.2)"))),
    ),
)

# --- a loaded checkpoint validated in training mode ------------------------------------------------

VALIDATE_BUGGY = code("""
    import io
    import torch
    import torch.nn.functional as F
    from torch import nn

    def make_model():
        return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2),
                             nn.Linear(16, 2))

    torch.manual_seed(0)
    trained = make_model()
    for _ in range(10):
        trained(torch.randn(32, 8))                       # stands for training
    checkpoint = io.BytesIO()
    torch.save(trained.state_dict(), checkpoint)

    model = make_model()
    checkpoint.seek(0)
    model.load_state_dict(torch.load(checkpoint))
    val_x, val_y = torch.randn(64, 8) + 1, torch.randint(0, 2, (64,))

    def validate():
        with torch.no_grad():
            losses = [F.cross_entropy(model(val_x[i:i + 16]), val_y[i:i + 16]).item()
                      for i in range(0, 64, 16)]
        return sum(losses) / len(losses)

    first, second = validate(), validate()
""")

VALIDATE_FIXED = VALIDATE_BUGGY.replace(
    "model.load_state_dict(torch.load(checkpoint))\n",
    "model.load_state_dict(torch.load(checkpoint))\n"
    "model.eval()                                          # dropout off, running statistics used\n")


def _stats_drift(model, reference) -> float:
    """The largest change of a BatchNorm running statistic between ``reference`` and ``model``."""
    ref = reference.state_dict()
    drift = [(v.float() - ref[k].float()).abs().max().item() for k, v in model.state_dict().items()
             if k.endswith(("running_mean", "running_var"))]
    return max(drift, default=0.0)


def _validate_measure(run: CodeRun) -> Symptom:
    first, second = run["first"], run["second"]
    drift = _stats_drift(run["model"], run["trained"])
    buggy = first != second or drift > 0
    return Symptom(f"two validation passes over the same data: loss {fmt(first, 4)}, then "
                   f"{fmt(second, 4)}; the running statistics moved by up to {fmt(drift, 2)} "
                   f"from the checkpoint", buggy, {"first": first, "second": second,
                                                   "drift": drift})


VALIDATE = Drill(
    id="data.validation_in_train_mode",
    category="data",
    title="A loaded checkpoint validated in training mode",
    buggy_code=VALIDATE_BUGGY,
    fixed_code=VALIDATE_FIXED,
    measure=_validate_measure,
    question=shuffled_question(
        "data.validation_in_train_mode",
        "Validating the same checkpoint twice on the same data gives two different losses, "
        "and the checkpoint saved after validating no longer matches the one loaded. Why?",
        "The reloaded checkpoint is validated in training mode",
        ("load_state_dict skips BatchNorm's running statistics",
         "torch.no_grad() is missing, so validation updates the weights",
         "The validation data needs shuffle=False to give one answer"),
        "load_state_dict restores tensors, not the mode; a new module starts in training mode"),
    hints=("Print the model's .training flag right after load_state_dict.",
           "Compare a BatchNorm layer's running_mean before and after one validation pass."),
    explanation="A freshly built module is in training mode, and load_state_dict only copies "
                "tensors: it does not switch the mode. So validation runs dropout (a different "
                "random mask every pass) and BatchNorm normalises with each validation batch's "
                "statistics while updating its running averages with them, changing the "
                "checkpoint's state. torch.no_grad() stops gradients, not these. Call "
                "model.eval() after loading, and model.train() before training resumes.",
    source="R64 in references.md (eval() and no_grad() are separate switches)",
    variants=(
        Variant("a small CNN with BatchNorm2d",
                {"val_x": "images", "val_y": "labels", "validate": "evaluate"},
                (("nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2),\n"
                  "                         nn.Linear(16, 2))",
                  "nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.2),\n"
                  "                         nn.Flatten(), nn.Linear(64, 2))"),
                 ("trained(torch.randn(32, 8))", "trained(torch.randn(32, 1, 6, 6))"),
                 ("torch.randn(64, 8) + 1", "torch.randn(64, 1, 6, 6) + 1"))),
        Variant("dropout only, a 3-class head",
                {"trained": "finetuned", "checkpoint": "blob"},
                (("nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2)",
                  "nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.2)"),
                 ("nn.Linear(16, 2))", "nn.Linear(16, 3))"),
                 ("torch.randint(0, 2, (64,))", "torch.randint(0, 3, (64,))"))),
        Variant("validation batches of 32",
                {"first": "run_a", "second": "run_b", "model": "restored"},
                (("val_y[i:i + 16]", "val_y[i:i + 32]"),
                 ("val_x[i:i + 16]", "val_x[i:i + 32]"),
                 ("range(0, 64, 16)", "range(0, 64, 32)"))),
    ),
)

DRILLS = (WORKERS, VALIDATE)
