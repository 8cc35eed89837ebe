"""Performance bugs (lesson 07): a data-loading bottleneck read from a profiler table, and a
torch.compile graph break from .item(), found with torch._dynamo.explain."""

from __future__ import annotations

import logging

from course_utils.drills.core import (
    CodeRun,
    Drill,
    Symptom,
    Variant,
    code,
    quiet_fds,
    run_code,
    shuffled_question,
)

# --- data loading bottleneck ----------------------------------------------------------------------

LOADER_BUGGY = code("""
    import time
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, record_function
    from torch.utils.data import DataLoader, Dataset

    class Images(Dataset):
        def __init__(self):
            self.raw = torch.randn(256, 64)
        def __len__(self):
            return len(self.raw)
        def __getitem__(self, i):
            time.sleep(0.0005)                       # stands for decoding one file
            return self.raw[i], self.raw[i].sum(0, keepdim=True)

    torch.manual_seed(0)
    model = nn.Linear(64, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def train_step(x, y):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    train_step(torch.randn(32, 64), torch.randn(32, 1))   # warm-up: first calls cost extra
    batches = DataLoader(Images(), batch_size=32)   # decodes 32 files per batch, in the loop
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for x, y in batches:
            with record_function("train_step"):
                train_step(x, y)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=5)
""")

LOADER_FIXED = LOADER_BUGGY.replace(
    "batches = DataLoader(Images(), batch_size=32)   # decodes 32 files per batch, in the loop\n",
    "images = Images()                                # decode every file once, before training\n"
    "xs, ys = map(torch.stack, zip(*(images[i] for i in range(len(images)))))\n"
    "batches = [(xs[i:i + 32], ys[i:i + 32]) for i in range(0, len(xs), 32)]   # slices: free\n")


def loader_rows(prof) -> dict[str, float]:
    """CPU total (ms) of the DataLoader row and the train_step row of a profiler run."""
    out = {"data loading": 0.0, "train_step": 0.0}
    for row in prof.key_averages():
        if "DataLoader" in row.key:
            out["data loading"] += row.cpu_time_total / 1000
        elif row.key == "train_step":
            out["train_step"] += row.cpu_time_total / 1000
    return out


def _loader_measure(run: CodeRun) -> Symptom:
    ms = loader_rows(run["prof"])
    top = max(run["prof"].key_averages(), key=lambda row: row.cpu_time_total).key
    slow = ms["data loading"] > ms["train_step"]

    def plot(ax):
        ax.barh(list(ms), list(ms.values()), color=["tab:red", "tab:blue"])
        ax.set(xlabel="CPU time total (ms)", title="profiler rows")

    return Symptom(f"the table's top row: {top}; loading batches takes more CPU time than the "
                   f"training steps: {slow}", slow, {"ms": ms}, plot=plot)


def _quiet_run(source: str, name: str) -> CodeRun:
    with quiet_fds():
        return run_code(source, name)


LOADER = Drill(
    id="performance.data_loading_bottleneck",
    category="performance",
    title="A data-loading bottleneck in the profiler table",
    buggy_code=LOADER_BUGGY,
    fixed_code=LOADER_FIXED,
    measure=_loader_measure,
    question=shuffled_question(
        "performance.data_loading_bottleneck",
        "The profiler's top row is enumerate(DataLoader)...__next__, far above train_step. Where "
        "is the bottleneck?",
        "In fetching and preparing each batch, outside the model's own step",
        ("In the backward pass inside train_step",
         "In the optimizer step inside train_step",
         "In the profiler's record_function wrapper"),
        "the DataLoader row times fetching each batch inside the loop; when it outweighs the "
        "step, the accelerator waits for data"),
    hints=("Compare the DataLoader row's CPU total with the train_step row.",
           "Move per-item work out of the loop: decode once and cache, or num_workers > 0 "
           "(with pin_memory on CUDA)."),
    explanation="The DataLoader wraps each __next__ in a profiler range, so its row shows the "
                "time spent producing batches. Here decoding every item dominates and the model "
                "waits (on a GPU: low utilisation). Fixes: preprocess once and cache, vectorise "
                "the per-item work, or load in parallel with num_workers > 0, persistent_workers "
                "and prefetching.",
    source="R75 in references.md (torch.profiler tables); R65 (DataLoader workers)",
    runner=_quiet_run,
    emulated="a 0.5 ms sleep per item stands for decoding a file from disk",
    variants=(
        Variant("192 items of 32 features, batches of 16",
                edits=(("torch.randn(256, 64)", "torch.randn(192, 32)"),
                       ("nn.Linear(64, 1)", "nn.Linear(32, 1)"),
                       ("torch.randn(32, 64), torch.randn(32, 1)", "torch.randn(16, 32), torch.randn(16, 1)"),
                       ("batch_size=32", "batch_size=16"), ("i + 32", "i + 16"),
                       ("len(xs), 32)", "len(xs), 16)"))),
        Variant("spectrograms, zero_grad first",
                {"Images": "Spectrograms", "model": "net", "optimizer": "opt", "images": "clips"},
                (("    loss = F.mse_loss(model(x), y)\n    optimizer.zero_grad()\n",
                  "    optimizer.zero_grad()\n    loss = F.mse_loss(model(x), y)\n"),)),
        Variant("augmented records",
                {"Images": "Records", "model": "regressor"},
                (("return self.raw[i], self.raw[i].sum(0, keepdim=True)",
                  "noisy = self.raw[i] + 0.1 * torch.randn(64)\n"
                  "        return noisy, noisy.mean(0, keepdim=True)"),)),
    ),
)

# --- torch.compile graph break from .item() -------------------------------------------------------

BREAK_BUGGY = code("""
    import torch
    import torch._dynamo

    def step(x, w):
        y = torch.relu(x @ w)
        if y.mean().item() > 0.5:             # Python decides on a tensor's value
            y = y * 2
        return (y @ w).sum()

    explanation = torch._dynamo.explain(step)(torch.randn(8, 8), torch.randn(8, 8))
""")

BREAK_FIXED = BREAK_BUGGY.replace(
    "    if y.mean().item() > 0.5:             # Python decides on a tensor's value\n"
    "        y = y * 2\n",
    "    y = torch.where(y.mean() > 0.5, y * 2, y)   # the decision stays in the graph\n")


def _break_measure(run: CodeRun) -> Symptom:
    e = run["explanation"]
    reasons = [r.reason.splitlines()[0] for r in e.break_reasons]
    text = f"graphs: {e.graph_count}, graph breaks: {len(reasons)}"
    if reasons:
        line = e.break_reasons[0].user_stack[-1].lineno
        text += f"; reason: {reasons[0]} (line {line}: {run.line(line)})"
    return Symptom(text, bool(reasons), {"graph_count": e.graph_count, "breaks": len(reasons)})


def _dynamo_quiet_run(source: str, name: str) -> CodeRun:
    """Run without dynamo's graph-break log lines (they carry times and process ids)."""
    logger = logging.getLogger("torch._dynamo")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return run_code(source, name)
    finally:
        logger.setLevel(level)


BREAK = Drill(
    id="performance.compile_graph_break",
    category="performance",
    title="A torch.compile graph break from .item()",
    buggy_code=BREAK_BUGGY,
    fixed_code=BREAK_FIXED,
    measure=_break_measure,
    question=shuffled_question(
        "performance.compile_graph_break",
        "torch.compile gives no speed-up on this step. What does torch._dynamo.explain find?",
        "A graph break at .item(), so the branch always runs eagerly",
        ("Nothing, as .item() is free inside a compiled function",
         "A recompilation for every new input value, but no graph break",
         "An error, since torch.compile cannot trace if statements"),
        "a branch on a tensor's value needs that value in Python; keep the decision in the graph "
        "with torch.where"),
    hints=("Run torch._dynamo.explain(step)(x, w) and read break_reasons.",
           "Replace the Python if on a tensor value with torch.where."),
    explanation="torch.compile traces Python into graphs. .item() brings a value back to "
                "Python for the if, which the tracer cannot follow (by default), so the graph "
                "breaks: two graphs with eager Python in between, and in a tight loop the "
                "speed-up can vanish. torch._dynamo.explain lists every break and its reason "
                "without a full compile. torch.where keeps the choice inside one graph.",
    source="R76 in references.md (graph breaks, torch._dynamo.explain)",
    runner=_dynamo_quiet_run,
    variants=(
        Variant("tanh, a batch of 4 rows of 16",
                {"w": "weight"},
                (("torch.randn(8, 8), torch.randn(8, 8)", "torch.randn(4, 16), torch.randn(16, 16)"),
                 ("torch.relu", "torch.tanh"), ("> 0.5", "> 0.3"))),
        Variant("scale down when the max is large",
                {"y": "h"},
                (("torch.where(y.mean() > 0.5, y * 2, y)", "torch.where(y.max() > 3.0, y / 2, y)"),
                 ("y.mean().item() > 0.5", "y.max().item() > 3.0"), ("y = y * 2", "y = y / 2"))),
        Variant("the value read into a variable first",
                {"x": "inputs"},
                (("    if y.mean().item() > 0.5:\n", "    level = y.mean().item()\n    if level > 0.5:\n"),)),
    ),
)

DRILLS = (LOADER, BREAK)
