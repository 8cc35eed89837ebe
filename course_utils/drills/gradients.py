"""Gradient bugs (lesson 07): a missing zero_grad, the step-%-4 accumulation loop, an in-place
op that breaks autograd."""

from __future__ import annotations

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- missing zero_grad ---------------------------------------------------------------------------

ZERO_GRAD_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 8), torch.randn(64, 1)
    grad_norms = []                                    # (instrumentation)
    for step in range(5):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        grad_norms.append(model.weight.grad.norm().item())
""")

ZERO_GRAD_FIXED = ZERO_GRAD_BUGGY.replace(
    "    loss.backward()\n", "    optimizer.zero_grad()\n    loss.backward()\n")


def _zero_grad_measure(run: CodeRun) -> Symptom:
    norms = run["grad_norms"]
    ratios = [n / norms[0] for n in norms]
    grows = ratios[-1] > 2
    text = ", ".join(f"{r:.2f}" for r in ratios)
    verdict = "grows with every step" if grows else "stays the size of one batch's gradient"
    return Symptom(f".grad norm at steps 1-{len(ratios)}, relative to step 1: {text} ({verdict})", grows,
                   {"ratios": ratios},
                   plot=lambda ax: (ax.plot(range(1, len(ratios) + 1), ratios, "o-"),
                                    ax.set(xlabel="step", ylabel="|grad| / |grad at step 1|")))


ZERO_GRAD = Drill(
    id="gradients.missing_zero_grad",
    category="gradients",
    title="Missing optimizer.zero_grad()",
    buggy_code=ZERO_GRAD_BUGGY,
    fixed_code=ZERO_GRAD_FIXED,
    measure=_zero_grad_measure,
    question=shuffled_question(
        "gradients.missing_zero_grad",
        "The loss falls at first, then the run goes unstable. What is wrong with this loop?",
        "Each step adds its gradient onto the gradients of every earlier step",
        ("The weights start too large, so the updates explode",
         "The learning rate is too high for this linear model",
         "Reusing one batch every step overfits it until it diverges"),
        "PyTorch accumulates gradients on purpose; without zero_grad() the gradient at step k is "
        "the sum of all k so far (with SGD on one batch, as if the learning rate grew every step)"),
    hints=("Print model.weight.grad.norm() after each backward().",
           "Which call sets .grad back to zero, and is it in the loop?"),
    explanation="backward() adds into .grad. Without optimizer.zero_grad() the gradient used at "
                "step k is the sum of k gradients. On the same batch, with the weights barely moving, the "
                "step grows about k times; as the weights move, the sum acts like momentum that "
                "never decays, and the run overshoots and oscillates. Call zero_grad() once per "
                "step, before backward().",
    source="R61 in references.md (gradients accumulate in .grad until zero_grad)",
    exercise="07.zero_grad_loop",
    variants=(
        Variant("a regression head on 16 features, Adam",
                {"x": "features", "y": "targets", "grad_norms": "norms"},
                (("nn.Linear(8, 1)", "nn.Linear(16, 1)"),
                 ("torch.randn(64, 8), torch.randn(64, 1)", "torch.randn(32, 16), torch.randn(32, 1)"),
                 ("torch.optim.SGD(model.parameters(), lr=0.01)",
                  "torch.optim.Adam(model.parameters(), lr=0.001)"))),
        Variant("a 3-class classifier",
                {"x": "inputs", "y": "labels"},
                (("nn.Linear(8, 1)", "nn.Linear(8, 3)"),
                 ("torch.randn(64, 1)", "torch.randint(0, 3, (64,))"),
                 ("F.mse_loss(model(x), y)", "F.cross_entropy(model(x), y)"))),
        Variant("momentum, six steps, the norm read before the step",
                {"x": "batch", "y": "target", "grad_norms": "history"},
                (("lr=0.01)", "lr=0.005, momentum=0.9)"),
                 ("range(5)", "range(6)"),
                 ("    optimizer.step()\n    grad_norms.append(model.weight.grad.norm().item())",
                  "    grad_norms.append(model.weight.grad.norm().item())\n    optimizer.step()"))),
    ),
)

# --- gradient accumulation with step % 4 ---------------------------------------------------------

ACCUM_BUGGY = code("""
    import copy
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    start = copy.deepcopy(model)                          # (instrumentation) for the check
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    micro_batches = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]
    for step, (x, y) in enumerate(micro_batches):
        loss = F.mse_loss(model(x), y)
        loss.backward()
        if step % 4 == 0:                                 # "one update per 4 micro-batches"
            optimizer.step()
""")

ACCUM_FIXED = code("""
    import copy
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Linear(8, 1)
    start = copy.deepcopy(model)                          # (instrumentation) for the check
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    micro_batches = [(torch.randn(4, 8), torch.randn(4, 1)) for _ in range(8)]
    optimizer.zero_grad()
    for step, (x, y) in enumerate(micro_batches):
        loss = F.mse_loss(model(x), y) / 4                # each micro-batch is a quarter
        loss.backward()
        if (step + 1) % 4 == 0:                           # after micro-batches 4 and 8
            optimizer.step()
            optimizer.zero_grad()
""")


def big_batch_reference(start: torch.nn.Module, micro_batches, accum: int, lr: float):
    """The model after one SGD step per group of ``accum`` micro-batches, each step on the
    group's concatenation: what gradient accumulation must reproduce."""
    import copy

    import torch.nn.functional as F

    model = copy.deepcopy(start)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for i in range(0, len(micro_batches), accum):
        group = micro_batches[i:i + accum]
        x = torch.cat([b[0] for b in group])
        y = torch.cat([b[1] for b in group])
        opt.zero_grad()
        F.mse_loss(model(x), y).backward()
        opt.step()
    return model


def _accum_measure(run: CodeRun) -> Symptom:
    batches, lr = run["micro_batches"], run["optimizer"].param_groups[0]["lr"]
    ref = big_batch_reference(run["start"], batches, 4, lr)
    diff = max((p - q).abs().max().item() for p, q in zip(run["model"].parameters(),
                                                          ref.parameters(), strict=True))
    buggy = diff > 1e-5
    steps = {1: "one", 2: "two", 3: "three", 4: "four"}.get(len(batches) // 4, len(batches) // 4)
    detail = f"differ from {steps} big-batch steps (max abs diff {fmt(diff, 2)})" if buggy else (
        f"match {steps} big-batch steps (max abs diff below 1e-5)")
    return Symptom(f"weights after {len(batches)} micro-batches {detail}", buggy, {"max_diff": diff})


ACCUM = Drill(
    id="gradients.accumulation_step_mod_4",
    category="gradients",
    title="Gradient accumulation with step % 4",
    buggy_code=ACCUM_BUGGY,
    fixed_code=ACCUM_FIXED,
    measure=_accum_measure,
    question=shuffled_question(
        "gradients.accumulation_step_mod_4",
        "This loop should make one update per 4 micro-batches, equal to a big-batch step. "
        "What is wrong?",
        "It steps after batch 1 and never zeroes or divides the sum",
        ("backward() must wait until all 4 losses are summed",
         "Accumulating changes only the speed, never the update",
         "The learning rate must be divided by 4 to match a big batch"),
        "accumulation must sum a quarter of each micro-batch's gradient over exactly 4 "
        "micro-batches, step, then zero"),
    hints=("Count the micro-batches that contribute to each optimizer.step().",
           "Step when (step + 1) % 4 == 0, divide each loss by 4, and zero_grad() after the step."),
    explanation="The loop never zeroes the gradients, so every update uses the sum of all "
                "micro-batches so far; step % 4 == 0 also fires after the very first micro-batch; "
                "and without dividing each loss by 4 the summed gradient is 4 times a big batch's. "
                "Fixed: loss / 4, step when (step + 1) % 4 == 0, then zero_grad().",
    source="R61 in references.md; a classic interview question on gradient accumulation",
    exercise="07.accumulate",
    variants=(
        Variant("a 6-input, 2-output regressor on micro-batches of 3",
                {"model": "regressor", "micro_batches": "chunks", "start": "initial"},
                (("nn.Linear(8, 1)", "nn.Linear(6, 2)"),
                 ("torch.randn(4, 8), torch.randn(4, 1)", "torch.randn(3, 6), torch.randn(3, 2)"))),
        Variant("12 micro-batches, a smaller learning rate",
                {"x": "inputs", "y": "targets"},
                (("lr=0.1)", "lr=0.05)"), ("for _ in range(8)", "for _ in range(12)"))),
        Variant("a two-layer model",
                {"model": "net", "x": "features", "y": "labels", "micro_batches": "shards"},
                (("model = nn.Linear(8, 1)",
                  "model = nn.Sequential(nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 1))"),)),
    ),
)

# --- in-place op breaks autograd -----------------------------------------------------------------

INPLACE_BUGGY = code("""
    import torch
    from torch import nn

    torch.manual_seed(0)
    layer = nn.Linear(8, 8)
    x = torch.randn(4, 8)
    h = torch.sigmoid(layer(x))     # sigmoid keeps its output for the backward pass
    h += x                          # residual connection, written in place
    h.sum().backward()
""")

INPLACE_FIXED = INPLACE_BUGGY.replace("h += x                          # residual connection, "
                                      "written in place",
                                      "h = h + x                       # a new tensor: the saved "
                                      "output is intact")


def _inplace_measure(run: CodeRun) -> Symptom:
    if run.error is not None:
        text = run.error_text
        short = text.split(":", 2)
        return Symptom(f"backward() raised {short[0]}: {short[1].strip()}", True,
                       error=text)
    grad = run["layer"].weight.grad
    ok = grad is not None and bool(torch.isfinite(grad).all())
    return Symptom(f"backward() ran; layer.weight.grad is finite: {ok}", not ok)


INPLACE = Drill(
    id="gradients.inplace_breaks_autograd",
    category="gradients",
    title="An in-place op on a tensor autograd saved",
    buggy_code=INPLACE_BUGGY,
    fixed_code=INPLACE_FIXED,
    measure=_inplace_measure,
    question=shuffled_question(
        "gradients.inplace_breaks_autograd",
        "backward() raises 'one of the variables needed for gradient computation has been "
        "modified by an inplace operation'. Which line is responsible, and why?",
        "h += x: it overwrites sigmoid's stored activation",
        ("h.sum(): a reduction cannot follow an in-place add",
         "torch.sigmoid: its gradient is undefined for large inputs",
         "layer(x): Linear frees its saved input after the forward"),
        "autograd keeps a version counter on every saved tensor and refuses to use one that "
        "changed after it was saved"),
    hints=("Which operations keep their output for backward? sigmoid, exp and tanh do.",
           "Replace the in-place update with an out-of-place one: h = h + x."),
    explanation="sigmoid saves its output to compute its gradient (s * (1 - s)). h += x changes "
                "that saved tensor; autograd notices through the tensor's version counter and "
                "raises rather than compute a wrong gradient. Write h = h + x. Changes made "
                "through .data or under no_grad() escape the check and do give silently wrong "
                "gradients.",
    source="R63 in references.md (autograd mechanics: in-place correctness checks)",
    variants=(
        Variant("a wider layer, a batch of 2",
                edits=(("nn.Linear(8, 8)", "nn.Linear(16, 16)"),
                       ("torch.randn(4, 8)", "torch.randn(2, 16)"))),
        Variant("the residual inside a block function",
                edits=(("h = torch.sigmoid(layer(x))", "def block(x):\n    h = torch.sigmoid(layer(x))"),
                       ("\nh += x\n", "\n    h += x\n    return h\nh = block(x)\n"),
                       ("\nh = h + x", "\n    h = h + x"),
                       ("output is intact\n", "output is intact\n    return h\nh = block(x)\n"))),
        Variant("token embeddings as the input",
                edits=(("torch.manual_seed(0)", "torch.manual_seed(1)"),
                       ("x = torch.randn(4, 8)",
                        "x = nn.Embedding(20, 8)(torch.tensor([3, 7, 1, 12]))"))),
    ),
)

DRILLS = (ZERO_GRAD, ACCUM, INPLACE)
