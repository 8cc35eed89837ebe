"""Two snippets of dubious MPS advice seen in circulation, run as drills (lesson 07): a "retry on OOM"
context manager that yields twice, and a LayerNorm that round-trips to the CPU on every call."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

# --- the retry context manager that yields twice ---------------------------------------------------

RETRY_BUGGY = code("""
    import contextlib

    @contextlib.contextmanager
    def safe_memory():                     # circulating advice: "retry" after an out-of-memory error
        try:
            yield
        except RuntimeError as e:
            if "out of memory" in str(e).lower():
                yield                      # "try once more"
            else:
                raise

    calls = 0
    def forward():                         # runs out of memory once, like a too-large batch
        global calls
        calls += 1
        if calls == 1:
            raise RuntimeError("MPS backend out of memory (emulated)")
        return "output"

    with safe_memory():
        output = forward()
""")

RETRY_FIXED = code("""
    import torch

    def retry_on_oom(fn, attempts=2):      # a function can call fn again; a with-block cannot
        for attempt in range(attempts):
            try:
                return fn()
            except RuntimeError as e:
                if "out of memory" not in str(e).lower() or attempt == attempts - 1:
                    raise
                if torch.backends.mps.is_available():
                    torch.mps.empty_cache()    # release cached blocks before the retry

    calls = 0
    def forward():                         # runs out of memory once, like a too-large batch
        global calls
        calls += 1
        if calls == 1:
            raise RuntimeError("MPS backend out of memory (emulated)")
        return "output"

    output = retry_on_oom(forward)
""")


def _retry_measure(run: CodeRun) -> Symptom:
    calls = run.get("calls")
    if run.error is not None:
        return Symptom(f"the with-block raised {run.error_text}; forward() ran {calls} time(s), "
                       "so nothing was retried", True, {"calls": calls}, error=run.error_text)
    return Symptom(f"output = {run['output']!r} after forward() ran {calls} times (one retry)",
                   False, {"calls": calls})


RETRY = Drill(
    id="seed.retry_yields_twice",
    category="seed advice",
    title="A 'retry on OOM' context manager that yields twice",
    buggy_code=RETRY_BUGGY,
    fixed_code=RETRY_FIXED,
    measure=_retry_measure,
    question=shuffled_question(
        "seed.retry_yields_twice",
        "This context manager promises to retry the block after an out-of-memory error. What "
        "actually happens when forward() raises one?",
        "RuntimeError: generator didn't stop after throw()",
        ("The block runs a second time and then succeeds",
         "It retries until memory is available again",
         "The error is swallowed, and output stays unset"),
        "@contextmanager re-raises into the generator at its yield; a second yield is an error, "
        "and no context manager can re-execute the body of a with statement"),
    hints=("Run it: which exception comes out, and how many times did forward() run?",
           "Retry with a function that calls fn() again, not with a context manager."),
    explanation="@contextlib.contextmanager throws the block's exception into the generator at "
                "its yield. Yielding again there makes contextlib raise RuntimeError('generator "
                "didn't stop after throw()'), which replaces the original error, and the block is "
                "never re-run: a with statement cannot execute its body twice. A retry needs a "
                "function that calls the work again (after freeing cached memory).",
    source="R38 in references.md (a generator context manager yields once; the body runs once)",
    emulated="the out-of-memory error is raised by the code itself, as MPS would raise it",
    variants=(
        Variant("another name, logits returned",
                {"safe_memory": "oom_guard", "output": "result"},
                (('return "output"', 'return "logits"'),)),
        Variant("a looser check, another counter",
                {"e": "err", "calls": "attempts_made"},
                (('if "out of memory" in str(e).lower():', 'if "memory" in str(e):'),
                 ("if calls == 1:", "if calls < 2:"))),
        Variant("forward takes a batch size",
                {"output": "prediction", "safe_memory": "gpu_guard"},
                (("def forward():", "def forward(batch_size=64):"),
                 ('return "output"', 'return f"logits for {batch_size} samples"'),
                 ("MPS backend out of memory (emulated)",
                  "MPS backend out of memory (emulated): tried to allocate 2.00 GiB"))),
    ),
)

# --- the LayerNorm that round-trips to the CPU ------------------------------------------------------

LAYERNORM_BUGGY = code("""
    import torch
    from torch import nn

    class SafeLayerNorm(nn.Module):        # circulating advice: "CPU fallback for normalization"
        def __init__(self, n):
            super().__init__()
            self.norm = nn.LayerNorm(n)
        def forward(self, x):
            device = x.device
            return self.norm(x.cpu()).to(device)

    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), SafeLayerNorm(64)) for _ in range(4)])
    x = torch.randn(8, 64)
""")

# The fix: drop the wrapper class and use nn.LayerNorm where the model lives.
LAYERNORM_FIXED = (LAYERNORM_BUGGY[:LAYERNORM_BUGGY.index("class SafeLayerNorm")]
                   + LAYERNORM_BUGGY[LAYERNORM_BUGGY.index("torch.manual_seed(0)"):]
                   ).replace("SafeLayerNorm(64)", "nn.LayerNorm(64)")


def count_transfers(model, x) -> int:
    """How many device transfers (.cpu(), .to(), .cuda(), .mps()) one forward pass asks for."""
    import torch
    from torch.overrides import TorchFunctionMode

    names = {"cpu", "to", "cuda", "mps"}

    class Count(TorchFunctionMode):
        n = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") in names:
                Count.n += 1
            return func(*args, **(kwargs or {}))

    with torch.no_grad(), Count():
        model(x)
    return Count.n


def _layernorm_measure(run: CodeRun) -> Symptom:
    n = count_transfers(run["model"], run["x"])
    layers = sum(1 for m in run["model"].modules() if type(m).__name__ in ("LayerNorm",))
    moved = norms_moved_with_model(run["model"])
    text = f"device transfers per forward pass: {n} ({layers} LayerNorms)"
    if n:
        text += (f"; {moved} norm weights move with model.to(), so on mps norm(x.cpu()) "
                 "would meet them on another device")
    return Symptom(text, n > 0, {"transfers": n, "moved_norm_weights": moved})


def norms_moved_with_model(model) -> int:
    """How many LayerNorm weights and biases are registered in ``model`` (model.to() moves them)."""
    from torch import nn

    return sum(1 for m in model.modules() if isinstance(m, nn.LayerNorm)
               for p in (m.weight, m.bias) if p is not None and any(p is q for q in model.parameters()))


LAYERNORM = Drill(
    id="seed.layernorm_cpu_round_trip",
    category="seed advice",
    title="A LayerNorm that round-trips to the CPU",
    buggy_code=LAYERNORM_BUGGY,
    fixed_code=LAYERNORM_FIXED,
    measure=_layernorm_measure,
    question=shuffled_question(
        "seed.layernorm_cpu_round_trip",
        "Circulating advice suggests this SafeLayerNorm 'for critical models'. What happens on a "
        "Mac once the model is moved with model.to('mps')?",
        "The first call raises a device mismatch error",
        ("It runs, with two blocking copies per LayerNorm call",
         "It runs as before, since unified memory makes .cpu() free",
         "It runs, and LayerNorm is computed more exactly on the CPU"),
        "model.to('mps') moves every registered submodule, self.norm too, so norm(x.cpu()) mixes "
        "a CPU input with mps weights; placement is explicit even with unified memory"),
    hints=("Count the .cpu() and .to() calls in one forward pass.",
           "Use nn.LayerNorm on the model's device; if an op truly is unsupported, lesson 04's "
           "fallback tracing finds it."),
    explanation="model.to('mps') moves every registered submodule, self.norm's weight and bias "
                "too, so the first norm(x.cpu()) raises an error: a CPU input meets mps "
                "weights. The round trip never gets to cost anything on a Mac. On a CPU-only "
                "machine it runs, with two transfers per LayerNorm per forward pass; were the "
                "weights kept on the CPU, each .cpu() of an mps tensor would be a blocking copy that "
                "waits for all queued GPU work (R40 in references.md). Use nn.LayerNorm where the "
                "model lives; measure before assuming an op is broken.",
    source="R40 in references.md (a blocking MPS-to-CPU copy commits and waits); lesson 04",
    emulated="transfers are counted on the CPU, where .cpu() is free; on a Mac each is a copy",
    variants=(
        Variant("3 layers of 32, a batch of 4",
                edits=(("nn.Linear(64, 64), SafeLayerNorm(64)) for _ in range(4)",
                        "nn.Linear(32, 32), SafeLayerNorm(32)) for _ in range(3)"),
                       ("nn.Linear(64, 64), nn.LayerNorm(64)) for _ in range(4)",
                        "nn.Linear(32, 32), nn.LayerNorm(32)) for _ in range(3)"),
                       ("torch.randn(8, 64)", "torch.randn(4, 32)"))),
        Variant("a block with GELU",
                {"x": "tokens"},
                (("nn.Sequential(nn.Linear(64, 64), SafeLayerNorm(64))",
                  "nn.Sequential(nn.Linear(64, 64), nn.GELU(), SafeLayerNorm(64))"),
                 ("nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64))",
                  "nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64))"))),
        Variant("to('cpu') and back to x.device",
                {"n": "width", "model": "net"},
                (("device = x.device\n        return self.norm(x.cpu()).to(device)",
                  "y = self.norm(x.to(\"cpu\"))\n        return y.to(x.device)"),
                 ("torch.randn(8, 64)", "torch.randn(16, 64)"))),
    ),
)

DRILLS = (RETRY, LAYERNORM)
