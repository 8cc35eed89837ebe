"""Lesson 03's material and exercises: an honest timer, the sync points of a loop, and logging
every N steps with the same values.

The lesson's workloads live here too, so the notebook, the exercises and the tests share them:
the issue classifier of seed 003 (scaled down), and ``leaky_loop``, a training loop with sync
points planted in it (each planted line ends with a ``# sync: <kind>`` comment).
"""

from __future__ import annotations

import inspect
import math
import random
import re
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome
from course_utils.core.questions import Question, Quiz
from course_utils.toolkit.syncpoints import find_sync_points, function_kind, make_loop, tensors_in
from course_utils.toolkit.timing import FakeDevice  # case inputs: defined outside the bank (`course grade`)

# --- lesson material ----------------------------------------------------------------------------

TOKENS, FEATURES, CLASSES = 128, 768, 3  # seed 003's batch is (32, 128, 768) with 3 labels


class TokenMean(nn.Module):
    """Average the token positions: (reports, tokens, features) -> (reports, features)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=1)


def issue_classifier(hidden: int = 512, seed: int = 0) -> nn.Module:
    """Seed 003's issue classifier with a small two-layer encoder before the token average."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                         TokenMean(), nn.Linear(hidden, CLASSES))


def issue_batch(reports: int = 16, seed: int = 0) -> torch.Tensor:
    """A batch of ``reports`` issue reports, each 128 token positions of 768 features."""
    return torch.randn(reports, TOKENS, FEATURES, generator=torch.Generator().manual_seed(seed))


def pooled_batches(n: int = 4, reports: int = 16, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``n`` batches of pooled report vectors (reports, 768) with labels, for training loops."""
    gen = torch.Generator().manual_seed(seed)
    return [(torch.randn(reports, FEATURES, generator=gen), torch.randint(0, CLASSES, (reports,),
                                                                          generator=gen))
            for _ in range(n)]


def classifier_head(hidden: int = 64, seed: int = 0) -> nn.Module:
    """The classifier on pooled vectors: 768 -> hidden -> 3."""
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, CLASSES))


def leaky_loop(model: nn.Module, batches: list, lr: float = 0.1) -> list[float]:
    """Lesson 03's training loop with hidden sync points planted in it (each line marked)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    max_loss = torch.tensor(5.0)  # made here without a device: a host tensor
    history = []
    for step, (x, y) in enumerate(batches):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        if torch.isnan(loss):  # sync: bool
            raise FloatingPointError(f"loss is NaN at step {step}")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(loss.item())  # sync: item
        wrong = x[logits.argmax(1) != y]  # sync: data-dependent shape
        if step % 2 == 0:
            print(f"step {step}: loss {loss:.3f}, {len(wrong)} misclassified")  # sync: print
        preds = logits.argmax(1).cpu().numpy()  # sync: to host
        shares = logits.softmax(1).mean(0).tolist()  # sync: tolist
        assert len(preds) == len(x) and len(shares) == 3 and max_loss.item() > 0  # host values
    return history


def planted_sync_points(fn=leaky_loop) -> set[tuple[int, str]]:
    """The (line, kind) pairs marked ``# sync: <kind>`` in ``fn``'s source."""
    lines, first = inspect.getsourcelines(fn)
    marks = (re.search(r"  # sync: (.+)$", line) for line in lines)
    return {(first + i, m.group(1).strip()) for i, m in enumerate(marks) if m}


def show_source(fn, start: int | None = None) -> None:
    """Print ``fn``'s source numbered from ``start`` (default: its file's line numbers),
    without the sync markers."""
    lines, first = inspect.getsourcelines(fn)
    for i, line in enumerate(lines, first if start is None else start):
        print(f"{i:>3}  {re.sub(r'  # sync: .+$', '', line.rstrip())}")


def train_logging(model: nn.Module, optimizer: torch.optim.Optimizer, batches: list, steps: int,
                  every: int = 1, host_work: float = 0.0) -> list[float]:
    """Train ``steps`` steps and return every step's loss, read to the host every ``every`` steps.

    ``host_work`` seconds of host time per step stand for the data loader preparing the next batch
    (simulated with ``time.sleep``: it takes no CPU from the emulated device).
    """
    values: list[float] = []
    pending: list[torch.Tensor] = []
    for i in range(steps):
        x, y = batches[i % len(batches)]
        if host_work:
            time.sleep(host_work)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pending.append(loss.detach())
        if len(pending) == every or i == steps - 1:
            values += torch.stack(pending).tolist()
            pending.clear()
    return values


# --- 03.honest_timer ----------------------------------------------------------------------------


def honest_time(fn, sync, clock, warmup: int, repeats: int) -> float:
    """Reference: warm up, then the median of ``repeats`` calls each synchronized before and after."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return statistics.median(times)


def _timer_case(label: str, warmup: int, repeats: int, **device) -> Case:
    dev = FakeDevice(**device)
    return Case(label, (dev.run, dev.sync, dev.clock, warmup, repeats))


def _timer_fixed() -> list[Case]:
    return [
        _timer_case("seed 003's story: 3 ms launch, 35 ms work, a slow first call", 2, 5,
                    launch=0.003, work=0.035, slow_calls=1, slow_extra=0.5),
        _timer_case("the first three calls are slow", 3, 5, launch=0.001, work=0.02, slow_calls=3,
                    slow_extra=0.2),
        _timer_case("a 200 ms hiccup in the second timed call", 1, 5, launch=0.002, work=0.01,
                    spike_at=3, spike=0.2),
        _timer_case("tiny kernel: launch-bound", 1, 3, launch=2e-5, work=5e-6),
    ]


def _timer_random(rng: random.Random) -> Case:
    warmup, repeats = rng.randint(1, 4), rng.choice((3, 5, 7))
    spike_at = warmup + rng.randint(1, repeats) if rng.random() < 0.5 else None
    device = dict(launch=rng.uniform(1e-5, 5e-3), work=rng.uniform(1e-4, 0.05),
                  slow_calls=rng.randint(0, warmup), slow_extra=rng.uniform(0.01, 1.0),
                  spike_at=spike_at, spike=rng.uniform(0.05, 0.5))
    return _timer_case(f"random device: warmup={warmup} repeats={repeats} spike_at={spike_at}",
                       warmup, repeats, **device)


def _timer_no_sync(fn, sync, clock, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def _timer_sync_before_only(fn, sync, clock, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        sync()
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)


def _timer_no_warmup(fn, sync, clock, warmup, repeats):
    return honest_time(fn, sync, clock, 0, repeats)


def _timer_mean_from_first_call(fn, sync, clock, warmup, repeats):
    times = []
    for _ in range(warmup + repeats):
        sync()
        start = clock()
        fn()
        sync()
        times.append(clock() - start)
    return sum(times) / len(times)


def _timer_mean(fn, sync, clock, warmup, repeats):
    for _ in range(warmup):
        fn()
    sync()
    start = clock()
    for _ in range(repeats):
        fn()
    sync()
    return (clock() - start) / repeats


# --- 03.sync_lines ------------------------------------------------------------------------------


def sync_lines(loop, *args) -> dict[int, int]:
    """Reference: {line of the loop's source, counting its ``def`` line as 1: syncs there}."""
    report = find_sync_points(loop, *args)
    first = inspect.getsourcelines(loop)[1]
    out: dict[int, int] = {}
    for point in report.points:
        line = point.where.line - first + 1
        out[line] = out.get(line, 0) + 1
    return out


# body statements for generated loops: ones that sync on an accelerator, and ones that do not.
# make_loop lives in course_utils.toolkit.syncpoints: its loops pickle, so `course grade` can send them.
_SYNCING = (
    "history.append(loss.item())",
    "stop = bool(torch.isnan(loss))",
    "if loss > 100: history.append(-1.0)",
    "text = f'step {step}: {loss:.3f}'",
    "text = str(loss)",
    "picked = x[y == 0]",
    "preds = logits.argmax(1).cpu()",
    "probs = logits.softmax(1).tolist()",
    "acc = (logits.argmax(1) == y).float().mean().item()",
    "total = total + float(loss.detach())",
    "if step % 2 == 0: history.append(loss.item())",
    "pair = loss.item(), logits.sum().item()",
)
_QUIET = (
    "kept.append(loss.detach())",
    "running = running + loss.detach()",
    "lr_now = host_lr.item()",
    "n = len(x)",
    "shape = tuple(logits.shape)",
    "text = f'step {step} of {len(batches)}'",
    "mask = y == 0",
    "best = logits.argmax(1)",
    "history.append(step * 0.5)",
)


def loop_data(rng: random.Random, steps: int) -> tuple[nn.Module, list]:
    """A small model and ``steps`` batches for a generated loop."""
    torch.manual_seed(rng.randint(0, 10_000))
    model = nn.Linear(4, 3)
    batches = [(torch.randn(6, 4), torch.randint(0, 3, (6,))) for _ in range(steps)]
    return model, batches


def _lines_fixed() -> list[Case]:
    rng = random.Random(3)
    cases = []
    for name, statements, steps in [
        ("only .item() every step", ["history.append(loss.item())"], 3),
        ("implicit syncs: if, mask, f-string", ["stop = bool(torch.isnan(loss))", "picked = x[y == 0]",
                                                 "text = f'step {step}: {loss:.3f}'"], 3),
        ("host tensors and detached device tensors do not sync",
         ["lr_now = host_lr.item()", "kept.append(loss.detach())", "history.append(loss.item())"], 2),
        ("a sync every other step", ["if step % 2 == 0: history.append(loss.item())",
                                     "preds = logits.argmax(1).cpu()"], 5),
    ]:
        loop = make_loop(statements, f"loop: {name}")
        cases.append(Case(name, (loop, *loop_data(rng, steps))))
    return cases


def _lines_random(rng: random.Random) -> Case:
    statements = rng.sample(_SYNCING, rng.randint(1, 4)) + rng.sample(_QUIET, rng.randint(1, 3))
    rng.shuffle(statements)
    steps = rng.randint(2, 5)
    name = f"random loop {rng.getrandbits(32):08x}"
    return Case(f"{name}, {steps} steps: {'; '.join(statements)}",
                (make_loop(statements, name), *loop_data(rng, steps)))


def _lines_absolute(loop, *args):
    return find_sync_points(loop, *args).by_line()


def _lines_grep(loop, *args):
    lines, _ = inspect.getsourcelines(loop)
    words = (".item()", ".cpu()", ".tolist()", "print(")
    return {i + 1: 1 for i, line in enumerate(lines) if any(w in line for w in words)}


def _lines_once_each(loop, *args):
    return {line: 1 for line in sync_lines(loop, *args)}


def _lines_explicit_only(loop, *args):
    report = find_sync_points(loop, *args)
    first = inspect.getsourcelines(loop)[1]
    out: dict[int, int] = {}
    for p in report.points:
        if p.kind in ("item", "tolist", "to host"):
            out[p.where.line - first + 1] = out.get(p.where.line - first + 1, 0) + 1
    return out


# --- 03.log_every_n -----------------------------------------------------------------------------


class _Tracked(torch.Tensor):
    """A tensor standing for one on an accelerator: it counts the host reads made of it."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tracked = [t for t in tensors_in((args, kwargs)) if isinstance(t, _Tracked)]
        reads = next((t.__dict__["_reads"] for t in tracked if "_reads" in t.__dict__), None)
        kind = function_kind(func, args, kwargs, lambda t: isinstance(t, _Tracked))
        if kind is not None and reads is not None:
            reads.append(kind)
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        if kind is not None or reads is None:
            return out  # a value on the host, or a plain tensor
        return _wrap(out, reads)


def _wrap(value, reads: list):
    if isinstance(value, torch.Tensor) and not isinstance(value, _Tracked):
        with torch._C.DisableTorchFunctionSubclass():
            value = value.as_subclass(_Tracked)
        value._reads = reads
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(_wrap(v, reads) for v in value)
    return value


class TrainingRun:
    """``run()`` performs one training step and returns its loss, a tensor "on the device".

    Each deep copy is a fresh run from the same start (``check`` copies its arguments per call);
    ``copies[-1].reads`` lists the host reads made of the losses of the latest copy.
    """

    def __init__(self, steps: int, seed: int = 0):
        self.steps, self.seed = steps, seed
        self.reads: list[str] = []
        self.copies: list[TrainingRun] = []
        self._done = 0
        self._model = self._optimizer = self._batches = None

    def __deepcopy__(self, memo) -> TrainingRun:
        fresh = TrainingRun(self.steps, self.seed)
        self.copies.append(fresh)
        return fresh

    def __repr__(self) -> str:
        return f"TrainingRun(steps={self.steps}, seed={self.seed})"

    def __call__(self) -> torch.Tensor:
        if self._model is None:
            self._model = classifier_head(hidden=16, seed=self.seed)
            self._optimizer = torch.optim.SGD(self._model.parameters(), lr=0.5)
            self._batches = pooled_batches(n=self.steps, reports=8, seed=self.seed)
        if self._done >= self.steps:
            raise IndexError(f"this run has only {self.steps} steps")
        x, y = self._batches[self._done]
        self._done += 1
        loss = F.cross_entropy(self._model(x), y)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        return _wrap(loss.detach(), self.reads)


def log_every_n(step, n_steps: int, n: int) -> list[float]:
    """Reference: every step's loss as floats, read to the host once per ``n`` steps."""
    values: list[float] = []
    pending = []
    for _ in range(n_steps):
        pending.append(step())
        if len(pending) == n:
            values += torch.stack(pending).tolist()
            pending = []
    if pending:
        values += torch.stack(pending).tolist()
    return values


def every_step(step, n_steps: int) -> list[float]:
    """The loop to rewrite: one ``.item()`` (one sync) per step."""
    return [step().item() for _ in range(n_steps)]


def _log_case(n_steps: int, n: int, seed: int) -> Case:
    return Case(f"{n_steps} steps, read every {n}", (TrainingRun(n_steps, seed), n_steps, n))


def _log_fixed() -> list[Case]:
    return [_log_case(12, 4, 0), _log_case(10, 4, 1), _log_case(7, 3, 2), _log_case(5, 5, 3),
            _log_case(6, 10, 4)]


def _log_random(rng: random.Random) -> Case:
    return _log_case(rng.randint(2, 14), rng.randint(2, 6), rng.randint(0, 1000))


def _log_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    problem = mismatch(expected.value, got.value, atol=1e-6, rtol=1e-5)
    if problem:
        return f"{problem} (the values must be every step's loss, as logging every step gives)"
    run, n_steps, n = case.args
    reads = run.copies[-1].reads
    allowed = math.ceil(n_steps / n)
    if len(reads) > allowed:
        kinds = ", ".join(sorted(set(reads)))
        return (f"read the device {len(reads)} times ({kinds}) in {n_steps} steps; reading once "
                f"every {n} steps needs at most {allowed}")
    return None


def _log_item_every_step(step, n_steps, n):
    return every_step(step, n_steps)


def _log_only_every_nth(step, n_steps, n):
    values = []
    for i in range(n_steps):
        loss = step()
        if (i + 1) % n == 0:
            values.append(loss.item())
    return values


def _log_drops_last_group(step, n_steps, n):
    values, pending = [], []
    for _ in range(n_steps):
        pending.append(step())
        if len(pending) == n:
            values += torch.stack(pending).tolist()
            pending = []
    return values


def _log_flush_from_step_zero(step, n_steps, n):
    values, pending = [], []
    for i in range(n_steps):
        pending.append(step())
        if i % n == 0:
            values += torch.stack(pending).tolist()
            pending = []
    if pending:
        values += torch.stack(pending).tolist()
    return values


def _log_float_each(step, n_steps, n):
    values, pending = [], []
    for i in range(n_steps):
        pending.append(step())
        if len(pending) == n or i == n_steps - 1:
            values += [float(v) for v in pending]
            pending = []
    return values


EXERCISES = [
    Exercise(
        id="03.honest_timer",
        title="An honest timer for an asynchronous device",
        reference=honest_time,
        fixed=_timer_fixed,
        random=_timer_random,
        atol=1e-9,
        rtol=1e-6,
        hints=(
            "A call only queues work: sync() after it, or the clock stops before the device is done.",
            "Sync before starting the clock too, so leftover work from earlier calls is not counted.",
            "First calls pay one-time costs: make `warmup` untimed calls before timing.",
            "Report the median of the timed calls: one slow call (a hiccup) must not move the result.",
        ),
        mutants={
            "no sync at all": _timer_no_sync,
            "sync only before the call": _timer_sync_before_only,
            "no warm-up": _timer_no_warmup,
            "mean over every call, the first included": _timer_mean_from_first_call,
            "one block, averaged": _timer_mean,
        },
    ),
    Exercise(
        id="03.sync_lines",
        title="List the sync points of a loop",
        reference=sync_lines,
        fixed=_lines_fixed,
        random=_lines_random,
        n_random=12,
        hints=(
            "Run it: find_sync_points(loop, *args) reports every sync with its line; reading the "
            "source misses implicit ones (if tensor, x[mask], f-strings) and flags host tensors.",
            "Count every sync point (report.points), not each line once: a line in a loop syncs once "
            "per step that runs it.",
            "Line numbers start at 1 on the def line: subtract inspect.getsourcelines(loop)[1] - 1.",
        ),
        mutants={
            "absolute line numbers": _lines_absolute,
            "greps the source for .item() and friends": _lines_grep,
            "counts each line once": _lines_once_each,
            "counts only explicit reads": _lines_explicit_only,
        },
    ),
    Exercise(
        id="03.log_every_n",
        title="Log every N steps with the same values",
        reference=log_every_n,
        fixed=_log_fixed,
        random=_log_random,
        judge=_log_judge,
        in_process_only="its check counts how often the answer reads the losses to the host, which "
                        "only the answer's own process can see, and a submission could forge a report of",
        hints=(
            "Keep the loss tensors (they stay on the device) and read them together every n steps.",
            "torch.stack(pending).tolist() reads n values in one sync; .item() or float() on each "
            "one is n syncs.",
            "Do not forget the last group when n_steps is not a multiple of n.",
        ),
        mutants={
            ".item() every step": _log_item_every_step,
            "keeps only every n-th loss": _log_only_every_nth,
            "drops the last partial group": _log_drops_last_group,
            "flushes at step % n == 0, from step 0": _log_flush_from_step_zero,
            "float() on each pending loss": _log_float_each,
        },
    ),
]

QUIZ = Quiz("03", [
    Question(
        "A forward pass queues about 35 ms of mps work and Python finishes launching it in about "
        "3 ms. What does a stopwatch around the call, without a synchronize, report?",
        ("about 35 ms", "about 3 ms", "about 38 ms", "0 ms: nothing ran"),
        1, "it stops when the call returns, after the launch; the device is still working "
        "(seed 003's worked example; facts §6)."),
    Question(
        "Which line makes the host wait for the device in a training loop on mps or cuda?",
        ("loss = loss_fn(model(x), y)", "losses.append(loss.detach())", "if torch.isnan(loss): break",
         "x = x.view(x.size(0), -1)"),
        2, "`if` needs a Python bool, so the value must come to the host: a sync every step "
        "(facts §6: reading values on the host syncs)."),
    Question(
        "Why does torch.utils.benchmark.Timer give honest numbers on mps in torch 2.13?",
        ("it runs the statement on the CPU", "its default timer calls torch.accelerator.synchronize()"
         " when an accelerator is available", "it uses CUDA events", "it only times the launch"),
        1, "accelerator-agnostic since PR #157131; before it only CUDA was synchronized (facts §6)."),
    Question(
        "You time 10 calls after a warm-up; one call hits a 200 ms pause. Which summary is robust?",
        ("the mean", "the median", "the maximum", "the sum"),
        1, "a single outlier moves the mean but not the median; Timer reports medians and "
        "interquartile ranges for that reason (torch.utils.benchmark docs, facts §6)."),
    Question(
        "You log the loss every step with loss.item(). What keeps the same numbers with fewer syncs?",
        ("loss.cpu().item() every step", "float(loss) every step",
         "keep loss.detach() in a list and read torch.stack(list).tolist() every N steps",
         "print(loss) every step"),
        2, "each .item(), float() or print is one sync; stacking N losses and reading them at once "
        "is one sync per N steps (facts §6)."),
    Question(
        "On an accelerator, which indexing forces a sync because the result's size depends on "
        "the values?",
        ("x[:, 0]", "x[idx] with an integer index tensor", "x[mask] with a boolean mask",
         "x.view(-1)"),
        2, "a boolean mask must be counted (nonzero) before the output can be allocated; "
        "masked_fill_ or torch.where keep the shape and avoid it (facts §6, partly inference)."),
])
