"""Memory bugs (lesson 07): budgeting training like inference, a validation loop that keeps its
graphs, and gradient checkpointing that silently stops a block from learning."""

from __future__ import annotations

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question
from course_utils.toolkit.memory import MiB, distinct_storage_bytes, graph_saved_bytes, saved_bytes

# Lesson 07's name for the toolkit's count of what autograd saves while ``fn()`` runs
# (``saved_activation_bytes(fn, exclude=params)``): one implementation, in toolkit.memory.saved.
saved_activation_bytes = saved_bytes


# --- training memory vs inference memory ---------------------------------------------------------

BUDGET_BUGGY = code("""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    budget = weight_bytes           # "inference fits in 2 MiB, so training fits too"
""")

BUDGET_FIXED = BUDGET_BUGGY.replace(
    'budget = weight_bytes           # "inference fits in 2 MiB, so training fits too"\n',
    "budget = 4 * weight_bytes       # weights + gradients + Adam's exp_avg and exp_avg_sq\n")


def training_footprint(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                       batch: torch.Tensor) -> dict[str, int]:
    """Run one real training step and measure its parts in bytes: weights, gradients, optimizer
    state (its tensors, not the scalar step counters) and the activations saved for backward, each
    storage once, as ``toolkit.memory`` counts them (lesson 07)."""
    params = list(model.parameters())
    optimizer.zero_grad()
    holder = {}
    activations = saved_bytes(lambda: holder.setdefault("loss", model(batch).pow(2).mean()), exclude=params)
    holder["loss"].backward()
    optimizer.step()
    state = [t for s in optimizer.state.values() for t in s.values()
             if isinstance(t, torch.Tensor) and t.dim() > 0]
    return {"weights": distinct_storage_bytes(params),
            "gradients": distinct_storage_bytes(p.grad for p in params),
            "optimizer state": distinct_storage_bytes(state), "activations": activations}


def _budget_measure(run: CodeRun) -> Symptom:
    model = run["model"]
    first = next(m for m in model.modules() if isinstance(m, torch.nn.Linear))
    parts = training_footprint(model, run["optimizer"], torch.randn(64, first.in_features))
    needed = parts["weights"] + parts["gradients"] + parts["optimizer state"]
    budget = run["budget"]
    text = (f"budget {budget / MiB:.1f} MiB; one Adam step holds weights {parts['weights'] / MiB:.1f}"
            f" + gradients {parts['gradients'] / MiB:.1f} + Adam state "
            f"{parts['optimizer state'] / MiB:.1f} = {needed / MiB:.1f} MiB "
            f"({needed / parts['weights']:.1f}x the weights), plus "
            f"{parts['activations'] / MiB:.2f} MiB of activations for a batch of 64")
    return Symptom(text, budget < needed, dict(parts, budget=budget))


BUDGET = Drill(
    id="memory.training_vs_inference",
    category="memory",
    title="Budgeting training memory like inference",
    buggy_code=BUDGET_BUGGY,
    fixed_code=BUDGET_FIXED,
    measure=_budget_measure,
    question=shuffled_question(
        "memory.training_vs_inference",
        "The model fits for evaluation but training runs out of memory. What does the budget "
        "forget?",
        "Gradients, Adam's two moments, and saved activations",
        ("The batch of inputs, which is a few megabytes",
         "Nothing, training and inference need the same memory",
         "The learning-rate scheduler's state and the loss"),
        "fp32 Adam training holds 16 bytes per parameter (weights, gradient, exp_avg, "
        "exp_avg_sq) before any activation"),
    hints=("List every tensor an Adam step keeps: weights, .grad, and optimizer.state.",
           "Each of .grad, exp_avg and exp_avg_sq has the weights' shape: 4x the weights."),
    explanation="Inference needs the weights (and a small working set). Training with Adam adds "
                "a gradient per weight and two moment buffers (exp_avg, exp_avg_sq), each the "
                "size of the weights: 16 bytes per float32 parameter, 4x the weights, before the "
                "activations saved for backward, which grow with the batch. Fixes: mixed "
                "precision, a smaller batch, gradient checkpointing, or a lighter optimizer.",
    source="R9 in references.md (Adam keeps exp_avg and exp_avg_sq); lesson 02 (budgets)",
    variants=(
        Variant("a narrower MLP with GELU",
                {"model": "net", "weight_bytes": "param_bytes"},
                (("nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)",
                  "nn.Linear(128, 512), nn.GELU(), nn.Linear(512, 128)"),)),
        Variant("AdamW, bytes counted from numel",
                {"weight_bytes": "size_bytes"},
                (("torch.optim.Adam(", "torch.optim.AdamW("),
                 ("sum(p.numel() * p.element_size() for p in model.parameters())",
                  "4 * sum(p.numel() for p in model.parameters())"))),
        Variant("a deeper 10-class classifier",
                {"model": "classifier", "budget": "reserved"},
                (("nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)",
                  "nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)"),)),
    ),
)

# --- a validation loop that keeps its graphs -----------------------------------------------------

GRAPH_BUGGY = code("""
    import torch
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10))
    model.eval()
    val_batches = [torch.randn(64, 256) for _ in range(4)]
    outputs = [model(x) for x in val_batches]      # kept to compute metrics later
""")

GRAPH_FIXED = GRAPH_BUGGY.replace(
    "outputs = [model(x) for x in val_batches]      # kept to compute metrics later\n",
    "with torch.no_grad():                          # no graph: nothing saved for backward\n"
    "    outputs = [model(x) for x in val_batches]\n")


def _graph_measure(run: CodeRun) -> Symptom:
    kept = graph_saved_bytes(run["outputs"], exclude=list(run["model"].parameters()))
    graph = run["outputs"][0].grad_fn is not None
    return Symptom(f"outputs carry a graph: {graph}; their graphs keep {kept / MiB:.2f} MiB of "
                   "saved activations alive", kept > 0, {"kept_bytes": kept})


GRAPH = Drill(
    id="memory.eval_keeps_graph",
    category="memory",
    title="Validation without torch.no_grad()",
    buggy_code=GRAPH_BUGGY,
    fixed_code=GRAPH_FIXED,
    measure=_graph_measure,
    question=shuffled_question(
        "memory.eval_keeps_graph",
        "model.eval() was called, yet validation memory grows with every batch kept. Why?",
        "Every output kept under eval() still holds its graph",
        ("eval() caches batch statistics for every batch it sees",
         "The list comprehension copies every batch",
         "Every forward adds a .grad buffer to each weight"),
        "eval() and no_grad() are different switches: one changes layer behaviour, the other "
        "stops autograd from recording"),
    hints=("Check outputs[0].grad_fn.",
           "Wrap inference in torch.no_grad() (or torch.inference_mode())."),
    explanation="model.eval() switches dropout and batch norm to inference behaviour; it does not "
                "stop autograd. Each output keeps a graph holding the activations saved for a "
                "backward that never comes, so memory grows with every output kept (the same "
                "happens with total_loss += loss in a training loop). Use torch.no_grad() or "
                "inference_mode(), and keep .item() or .detach() values.",
    source="R64 in references.md (no_grad stops autograd recording; eval() does not)",
    variants=(
        Variant("a smaller classifier, 6 batches",
                {"model": "classifier", "val_batches": "loader_batches"},
                (("nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 10)",
                  "nn.Linear(128, 256), nn.Tanh(), nn.Linear(256, 5)"),
                 ("torch.randn(64, 256) for _ in range(4)", "torch.randn(32, 128) for _ in range(6)"))),
        Variant("a loop that appends",
                {"val_batches": "held_out"},
                (("    outputs = [model(x) for x in val_batches]\n",
                  "    outputs = []\n    for x in val_batches:\n        outputs.append(model(x))\n"),
                 ("\noutputs = [model(x) for x in val_batches]\n",
                  "\noutputs = []\nfor x in val_batches:\n    outputs.append(model(x))\n"))),
        Variant("probabilities kept, dropout in the model",
                {"model": "net", "x": "batch"},
                (("nn.ReLU(), nn.Linear(1024, 10)", "nn.ReLU(), nn.Dropout(0.1), nn.Linear(1024, 10)"),
                 ("[model(x) for x in val_batches]", "[model(x).softmax(-1) for x in val_batches]"))),
    ),
)

# --- gradient checkpointing with use_reentrant=True ----------------------------------------------

CKPT_BUGGY = code("""
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    block1 = nn.Sequential(nn.Linear(32, 32), nn.Tanh())
    block2 = nn.Linear(32, 1)
    x = torch.randn(8, 32)                                # data: requires_grad is False
    h = checkpoint(block1, x, use_reentrant=True)          # recompute block1 during backward
    loss = block2(h).pow(2).mean()
    loss.backward()
""")

CKPT_FIXED = CKPT_BUGGY.replace("use_reentrant=True)          # recompute",
                                "use_reentrant=False)         # recompute")


def _ckpt_measure(run: CodeRun) -> Symptom:
    grad = run["block1"][0].weight.grad
    warned = [w for w in run.warnings if "requires_grad" in w]
    text = f"block1's weight.grad is {'None' if grad is None else 'set'}"
    if warned:
        text += f"; warning: {warned[0]}"
    return Symptom(text, grad is None, {"warned": bool(warned)})


CKPT = Drill(
    id="memory.checkpoint_no_grad_input",
    category="memory",
    title="Gradient checkpointing that stops a block learning",
    buggy_code=CKPT_BUGGY,
    fixed_code=CKPT_FIXED,
    measure=_ckpt_measure,
    question=shuffled_question(
        "memory.checkpoint_no_grad_input",
        "After adding checkpointing to save memory, block1 stops learning. Why?",
        "The reentrant checkpoint sees no input needing grad",
        ("Checkpointing freezes the parameters of the block it wraps",
         "The activation's output cannot be recomputed exactly",
         "The recomputation draws a different random seed"),
        "the reentrant implementation only builds a graph through inputs that require grad; "
        "use_reentrant=False tracks the block's parameters as well"),
    hints=("Print block1[0].weight.grad after backward().",
           "Pass use_reentrant=False (the recommended implementation)."),
    explanation="Checkpointing trades compute for memory: it keeps a block's inputs, drops the "
                "activations inside, and runs the block's forward again during backward. The "
                "reentrant implementation (use_reentrant=True) only connects the graph through "
                "inputs that require grad; raw data does not, so block1's weights get no gradient "
                "and PyTorch only warns. use_reentrant=False handles it.",
    source="R74 in references.md (torch.utils.checkpoint, use_reentrant)",
    variants=(
        Variant("16 units, GELU, a batch of 4",
                {"block2": "head", "x": "inputs"},
                (("nn.Linear(32, 32), nn.Tanh()", "nn.Linear(16, 16), nn.GELU()"),
                 ("nn.Linear(32, 1)", "nn.Linear(16, 1)"), ("torch.randn(8, 32)", "torch.randn(4, 16)"))),
        Variant("a two-layer block, an MSE loss",
                {"block2": "readout", "h": "hidden"},
                (("nn.Linear(32, 32), nn.Tanh()", "nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32)"),
                 ("block2(h).pow(2).mean()",
                  "torch.nn.functional.mse_loss(block2(h), torch.ones(8, 1))"))),
        Variant("features from a frozen encoder",
                {"x": "features", "loss": "objective"},
                (("x = torch.randn(8, 32)",
                  "encoder = nn.Linear(12, 32).requires_grad_(False)\nx = encoder(torch.randn(8, 12))"),)),
    ),
)

DRILLS = (BUDGET, GRAPH, CKPT)
