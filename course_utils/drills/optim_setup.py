"""Optimizer set-up bugs (lesson 07): layers in a plain Python list, an optimizer built before a
layer swap, weight decay on norm gains and biases."""

from __future__ import annotations

from torch import nn

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- layers kept in a plain Python list ------------------------------------------------------------

LIST_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Tower(nn.Module):
        def __init__(self, width, depth):
            super().__init__()
            self.stem = nn.Linear(4, width)
            self.blocks = [nn.Linear(width, width) for _ in range(depth)]
            self.head = nn.Linear(width, 1)

        def forward(self, x):
            h = torch.relu(self.stem(x))
            for block in self.blocks:
                h = torch.relu(block(h))
            return self.head(h)

    torch.manual_seed(0)
    model = Tower(8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    for step in range(5):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

LIST_FIXED = LIST_BUGGY.replace(
    "self.blocks = [nn.Linear(width, width) for _ in range(depth)]",
    "self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))  # registered")


def _children(container) -> list[nn.Module]:
    """The modules a list, tuple, dict, ModuleList or ModuleDict holds."""
    return list(container.values() if hasattr(container, "values") else container)


def _list_measure(run: CodeRun) -> Symptom:
    model, optimizer = run["model"], run["optimizer"]
    inner = [p for block in _children(model.blocks) for p in block.parameters()]
    known = {id(p) for p in model.parameters()}
    stepped = {id(p) for group in optimizer.param_groups for p in group["params"]}
    hidden = [p for p in inner if id(p) not in known]
    idle = sum(id(p) not in stepped for p in inner)
    keys = len(model.state_dict())
    return Symptom(f"model.parameters() lists {len(inner) - len(hidden)} of the blocks' "
                   f"{len(inner)} tensors; the optimizer steps {len(inner) - idle} of them; "
                   f"state_dict has {keys} entries",
                   bool(hidden), {"hidden": len(hidden), "idle": idle, "state_dict_keys": keys})


PLAIN_LIST = Drill(
    id="gradients.plain_list_of_layers",
    category="gradients",
    title="Layers kept in a plain Python list",
    buggy_code=LIST_BUGGY,
    fixed_code=LIST_FIXED,
    measure=_list_measure,
    question=shuffled_question(
        "gradients.plain_list_of_layers",
        "The loss falls a little, then stalls far above what a model this size reaches; "
        "saving and reloading the model changes its predictions. What is wrong?",
        "The blocks in a plain list are not in model.parameters()",
        ("ReLU after every block kills the gradient of the head",
         "Nothing clears .grad, so gradients pile up over steps",
         "SGD needs momentum to train more than one hidden layer"),
        "nn.Module registers a submodule only when it is assigned as a Module (or a ModuleList / "
        "ModuleDict); a Python list is an ordinary attribute"),
    hints=("Compare sum(p.numel() for p in model.parameters()) with the size you expect.",
           "Which container makes nn.Module see the layers inside it?"),
    explanation="nn.Module finds submodules through attribute assignment: a Module (or a "
                "ModuleList / ModuleDict) is registered, a plain list is not. The blocks still "
                "run in forward and even receive a .grad, but model.parameters() leaves them "
                "out, so the optimizer never updates them, model.to(device) does not move them "
                "and state_dict() does not save them. Use nn.ModuleList (nn.ModuleDict for a dict).",
    source="R82 in references.md (nn.ModuleList registers the modules it holds)",
    variants=(
        Variant("an encoder of two 16-wide layers, Adam",
                {"Tower": "Encoder", "blocks": "layers", "block": "layer", "h": "hidden"},
                (("Tower(8, 3)", "Tower(16, 2)"),
                 ("torch.optim.SGD(model.parameters(), lr=0.1)",
                  "torch.optim.Adam(model.parameters(), lr=0.01)"))),
        Variant("layers in a dict, an nn.ModuleDict in the fix",
                {"Tower": "Branches", "blocks": "stages", "block": "stage"},
                (("[nn.Linear(width, width) for _ in range(depth)]",
                  "{f\"s{i}\": nn.Linear(width, width) for i in range(depth)}"),
                 ("nn.ModuleList(nn.Linear(width, width) for _ in range(depth))",
                  "nn.ModuleDict({f\"s{i}\": nn.Linear(width, width) for i in range(depth)})"),
                 ("for block in self.blocks:", "for block in self.blocks.values():"))),
        Variant("a 3-class classifier, the residual written out",
                {"Tower": "Classifier", "x": "inputs", "y": "labels", "blocks": "mixers"},
                (("self.head = nn.Linear(width, 1)", "self.head = nn.Linear(width, 3)"),
                 ("h = torch.relu(block(h))", "h = h + torch.relu(block(h))"),
                 ("torch.randn(32, 1)", "torch.randint(0, 3, (32,))"),
                 ("F.mse_loss(model(x), y)", "F.cross_entropy(model(x), y)"))),
    ),
)

# --- an optimizer built before the head was swapped ------------------------------------------------

SWAP_BUGGY = code("""
    import copy
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
    model = nn.Sequential(backbone, nn.Linear(32, 10))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model[1] = nn.Linear(32, 3)
    start = copy.deepcopy(model)                          # (instrumentation) for the check
    x, y = torch.randn(64, 16), torch.randint(0, 3, (64,))
    for step in range(10):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

SWAP_FIXED = SWAP_BUGGY.replace(
    "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\nmodel[1] = nn.Linear(32, 3)\n",
    "model[1] = nn.Linear(32, 3)                           # swap the head first\n"
    "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)   # then collect the parameters\n")


def _swap_measure(run: CodeRun) -> Symptom:
    model, optimizer, start = run["model"], run["optimizer"], run["start"]
    held = {id(p) for group in optimizer.param_groups for p in group["params"]}
    names = dict(model.named_parameters())
    outside = [n for n, p in names.items() if id(p) not in held]
    moved = {n: (names[n] - start.state_dict()[n]).abs().max().item() for n in outside}
    stale = len(held - {id(p) for p in names.values()})
    text = ", ".join(f"{n} moved {fmt(d, 2)}" for n, d in moved.items()) or "none"
    return Symptom(f"model tensors the optimizer does not hold: {text}; tensors it holds that "
                   f"the model no longer has: {stale}", bool(outside),
                   {"outside": outside, "stale": stale, "moved": moved})


SWAP = Drill(
    id="gradients.optimizer_before_layer_swap",
    category="gradients",
    title="An optimizer built before a layer swap",
    buggy_code=SWAP_BUGGY,
    fixed_code=SWAP_FIXED,
    measure=_swap_measure,
    question=shuffled_question(
        "gradients.optimizer_before_layer_swap",
        "Fine-tuning a pretrained 10-class model on a 3-class task: the loss barely moves and "
        "the new head's weights are exactly their initial values. Why?",
        "The optimizer holds the old head's parameters, not the new ones",
        ("cross_entropy still expects 10 classes, as the model had in pretraining",
         "AdamW's weight decay cancels the new head's updates",
         "The backbone must be frozen before a new head can train"),
        "an optimizer keeps references to the tensors it was given when it was built; later "
        "changes to the model do not reach it"),
    hints=("Check whether model[1].weight is among the tensors of optimizer.param_groups.",
           "Which comes first: changing the model, or collecting its parameters?"),
    explanation="torch.optim.AdamW(model.parameters()) stores references to the tensors that "
                "exist at that moment. Assigning a new head afterwards gives the model new "
                "tensors the optimizer has never seen: they receive gradients but are never "
                "stepped, while the optimizer keeps stepping the old head's tensors (unused, "
                "their .grad stays None, yet they stay alive in the optimizer). Swap layers "
                "first, build the optimizer last, or add_param_group for new layers.",
    source="R83 in references.md (an optimizer is given an iterable of the tensors to optimize)",
    variants=(
        Variant("SGD with momentum, other data names",
                {"backbone": "trunk", "x": "features", "y": "labels"},
                (("optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)",
                  "optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)"),)),
        Variant("a 5-class task on 24 features",
                {"model": "net", "start": "before"},
                (("nn.Linear(16, 32)", "nn.Linear(24, 32)"),
                 ("nn.Linear(32, 3)", "nn.Linear(32, 5)"),
                 ("torch.randn(64, 16), torch.randint(0, 3, (64,))",
                  "torch.randn(48, 24), torch.randint(0, 5, (48,))"))),
        Variant("the head replaced by a two-layer head",
                {"backbone": "encoder"},
                (("model[1] = nn.Linear(32, 3)",
                  "model[1] = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 3))"),
                 ("range(10)", "range(8)"))),
    ),
)

# --- weight decay on norm gains and biases ---------------------------------------------------------

DECAY_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.2)
    x, y = torch.randn(64, 16), torch.randn(64, 1)
    for step in range(50):
        loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

DECAY_FIXED = DECAY_BUGGY.replace(
    "optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.2)\n",
    "matrices = [p for p in model.parameters() if p.ndim >= 2]\n"
    "vectors = [p for p in model.parameters() if p.ndim < 2]   # norm gains and biases\n"
    "optimizer = torch.optim.AdamW([{\"params\": matrices, \"weight_decay\": 0.2},\n"
    "                               {\"params\": vectors, \"weight_decay\": 0.0}], lr=0.01)\n")


def _decay_measure(run: CodeRun) -> Symptom:
    model, optimizer = run["model"], run["optimizer"]
    vectors = {id(p) for p in model.parameters() if p.ndim < 2}
    decayed, factor, steps = 0, 1.0, 0
    for group in optimizer.param_groups:
        hit = [p for p in group["params"] if id(p) in vectors]
        if hit and group["weight_decay"] > 0:
            decayed += len(hit)
            steps = int(optimizer.state[hit[0]]["step"])
            factor = min(factor, (1 - group["lr"] * group["weight_decay"]) ** steps)
    effect = (f"over {steps} steps the decay alone scaled them by {fmt(factor)}" if decayed
              else "only training moves them")
    return Symptom(f"1-D tensors (norm gains, biases) under weight decay: {decayed} of "
                   f"{len(vectors)}; {effect}",
                   decayed > 0, {"decayed": decayed, "factor": factor})


DECAY = Drill(
    id="gradients.weight_decay_on_norms",
    category="gradients",
    title="Weight decay on norm gains and biases",
    buggy_code=DECAY_BUGGY,
    fixed_code=DECAY_FIXED,
    measure=_decay_measure,
    question=shuffled_question(
        "gradients.weight_decay_on_norms",
        "A reviewer says this AdamW set-up slowly pulls the LayerNorm scales toward zero. "
        "Where in the code is that, and why?",
        "One param group applies weight decay to the 1-D gains as well",
        ("LayerNorm's gain is a buffer, so the optimizer cannot update it",
         "lr=0.01 with GELU makes the LayerNorm gain shrink on its own",
         "AdamW adds decay to the gradient, which LayerNorm divides away"),
        "decoupled weight decay multiplies every parameter in its group by (1 - lr * "
        "weight_decay) each step, gains and biases included"),
    hints=("Print each param group's weight_decay and the shapes of its tensors.",
           "Build two param groups: decay for matrices (p.ndim >= 2), none for 1-D tensors."),
    explanation="AdamW shrinks every parameter of a group by a factor (1 - lr * weight_decay) "
                "per step. With one group that includes the LayerNorm gains (which start at 1 "
                "and set the scale of each feature) and the biases, the decay pulls them toward "
                "0 for no regularising benefit; the common practice (BERT's reference optimizer, "
                "Hugging Face's Trainer, nanoGPT) is a second param group with weight_decay=0 "
                "for the 1-D tensors. How much it hurts depends on lr, weight decay and run "
                "length: small per step, it adds up over a long run.",
    source="R84 in references.md (AdamW's decoupled weight decay, per param group)",
    variants=(
        Variant("a BatchNorm MLP, 30 steps",
                {"x": "inputs", "y": "targets"},
                (("nn.LayerNorm(32), nn.GELU()", "nn.BatchNorm1d(32), nn.ReLU()"),
                 ("range(50)", "range(30)"))),
        Variant("a token model with an embedding and a final LayerNorm",
                {"x": "tokens", "y": "labels"},
                (("nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 1))",
                  "nn.Sequential(nn.Embedding(50, 32), nn.LayerNorm(32), nn.Linear(32, 50))"),
                 ("torch.randn(64, 16), torch.randn(64, 1)",
                  "torch.randint(0, 50, (64,)), torch.randint(0, 50, (64,))"),
                 ("F.mse_loss(model(x), y)", "F.cross_entropy(model(x), y)"))),
        Variant("weight decay 0.1, two LayerNorms",
                {"model": "net"},
                (("nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 1)",
                  "nn.LayerNorm(16), nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), "
                  "nn.Linear(32, 1)"),
                 ("weight_decay=0.2", "weight_decay=0.1"),
                 ("\"weight_decay\": 0.2", "\"weight_decay\": 0.1"))),
    ),
)

DRILLS = (PLAIN_LIST, SWAP, DECAY)
