"""Loss bugs of sequence models (lesson 08's timed drills): next-token labels left in place,
cross_entropy given (B, S, V) logits, squeeze() on a batch of one, padding in the loss."""

from __future__ import annotations

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- next-token labels not shifted ----------------------------------------------------------------

SHIFT_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    V, S = 10, 12
    starts = torch.randint(0, V, (32, 1))
    tokens = (starts + 3 * torch.arange(S)) % V
    model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for step in range(30):
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

SHIFT_FIXED = SHIFT_BUGGY.replace(
    "F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))",
    "F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))   # t predicts t+1")


def _shift_measure(run: CodeRun) -> Symptom:
    tokens = run["tokens"]
    with torch.no_grad():
        guesses = run["model"](tokens).argmax(-1)
    copies = (guesses == tokens).float().mean().item()
    follows = (guesses[:, :-1] == tokens[:, 1:]).float().mean().item()
    return Symptom(f"after {run['step'] + 1} steps, loss {fmt(run['loss'].item())}: the model "
                   f"predicts the token it reads at {copies:.0%} of positions, the next token at "
                   f"{follows:.0%}", copies > follows, {"copies": copies, "follows": follows})


SHIFT = Drill(
    id="losses.next_token_labels_unshifted",
    category="losses",
    title="Next-token loss on labels that are not shifted",
    buggy_code=SHIFT_BUGGY,
    fixed_code=SHIFT_FIXED,
    measure=_shift_measure,
    question=shuffled_question(
        "losses.next_token_labels_unshifted",
        "A next-token model's loss falls to almost zero within a few steps. At generation time it "
        "just repeats its input. Why?",
        "Position t's target is its own input token",
        ("lr=0.05 is too high for Adam, so it overfits",
         "The embedding and output layers should share weights",
         "cross_entropy wants logits of shape (B, V, S)"),
        "the logits at position t must be scored against token t+1: logits[:, :-1] against "
        "tokens[:, 1:]. Scored against token t, the model only has to copy what it reads"),
    hints=("Compare the model's argmax guesses with the tokens it reads and with the next ones.",
           "Drop the last position's logits and the first token: logits[:, :-1] vs tokens[:, 1:]."),
    explanation="A language model predicts the next token. Scored against the token at the "
                "same position, the model learns the identity map, which is easy, so the "
                "loss drops to near zero and looks like fast learning. Here it copies its input at "
                "nearly every position and predicts the real next token almost never. Shift: "
                "score logits[:, :-1] against tokens[:, 1:] (some libraries shift inside the model, "
                "so check which convention yours follows).",
    source="R62 in references.md (cross_entropy scores each row of logits against the target "
           "given for it)",
    variants=(
        Variant("16 tokens in the vocabulary, steps of 5",
                {"model": "lm", "optimizer": "opt"},
                (("V, S = 10, 12", "V, S = 16, 10"), ("3 * torch.arange(S)", "5 * torch.arange(S)"))),
        Variant("cross_entropy over (B, V, S)",
                {"optimizer": "adam", "logits": "scores"},
                (("F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))",
                  "F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:])"),
                 ("F.cross_entropy(logits.reshape(-1, V), tokens.reshape(-1))",
                  "F.cross_entropy(logits.transpose(1, 2), tokens)"))),
        Variant("labels copied from the inputs, a hidden layer",
                {"model": "net"},
                (("    logits = model(tokens)\n", "    logits = model(tokens)\n    labels = tokens[:]\n"),
                 ("tokens[:, 1:].reshape(-1))", "labels[:, 1:].reshape(-1))"),
                 ("tokens.reshape(-1))", "labels.reshape(-1))"),
                 ("nn.Linear(16, V))", "nn.GELU(), nn.Linear(16, V))"))),
    ),
)

# --- cross_entropy on (B, S, V) logits ------------------------------------------------------------

CLASSDIM_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    V, S = 8, 8
    starts = torch.randint(0, V, (32, 1))
    tokens = (starts + torch.arange(S + 1)) % V
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for step in range(30):
        logits = model(inputs)
        loss = F.cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

CLASSDIM_FIXED = CLASSDIM_BUGGY.replace(
    "F.cross_entropy(logits, targets)",
    "F.cross_entropy(logits.transpose(1, 2), targets)   # classes in dim 1: (B, V, S)")


def _classdim_measure(run: CodeRun) -> Symptom:
    logits, targets = run["logits"].detach(), run["targets"]
    vocab = logits.shape[-1]
    true = torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1)).item()
    reported = run["loss"].item()
    accuracy = (logits.argmax(-1) == targets).float().mean().item()
    return Symptom(f"loss as computed {fmt(reported)}; cross-entropy over the vocabulary "
                   f"{fmt(true)}; next-token accuracy {accuracy:.0%}", abs(reported - true) > 1e-4,
                   {"reported": reported, "true": true, "accuracy": accuracy})


CLASSDIM = Drill(
    id="losses.cross_entropy_class_dim",
    category="losses",
    title="cross_entropy given (batch, sequence, vocabulary) logits",
    buggy_code=CLASSDIM_BUGGY,
    fixed_code=CLASSDIM_FIXED,
    measure=_classdim_measure,
    question=shuffled_question(
        "losses.cross_entropy_class_dim",
        "The loss falls, no error is raised, yet next-token accuracy stays low. Which dimension "
        "does F.cross_entropy treat as the classes here?",
        "Dim 1, which here holds the sequence positions",
        ("The last dim, which holds the vocabulary entries",
         "The flattened batch times positions, one row per token",
         "None, it raises when targets are not one-hot"),
        "F.cross_entropy reads input (N, C, d1, ...): with logits (B, S, V) it takes the S "
        "positions as classes and the vocabulary as an extra dim. It runs only because S == V "
        "here. Pass logits.transpose(1, 2) or flatten both to (B*S, V) and (B*S,)"),
    hints=("Read the shapes F.cross_entropy documents for input and target with extra dims.",
           "Compare loss with F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))."),
    explanation="F.cross_entropy expects the classes in dim 1: input (N, C) or (N, C, d1, ...), "
                "target (N) or (N, d1, ...). Given (B, S, V) logits it normalises over the S "
                "positions and pairs target[b, j] with the j-th vocabulary column. Shapes usually "
                "clash and it raises; when S == V they line up and it trains the wrong objective "
                "without a word. Move the classes: logits.transpose(1, 2), or flatten to "
                "(B*S, V) against (B*S,).",
    source="R62 in references.md (CrossEntropyLoss: input (N, C, d1, ...) with the classes "
           "in dim 1)",
    variants=(
        Variant("6 tokens, vocabulary 6",
                {"inputs": "context", "model": "net"},
                (("V, S = 8, 8", "V, S = 6, 6"),)),
        Variant("nn.CrossEntropyLoss",
                {"optimizer": "opt", "tokens": "sequences"},
                (("lr=0.05)\n", "lr=0.05)\ncriterion = nn.CrossEntropyLoss()\n"),
                 ("F.cross_entropy(", "criterion("))),
        Variant("12 positions and tokens, a hidden layer",
                {"tokens": "stream"},
                (("V, S = 8, 8", "V, S = 12, 12"), ("nn.Linear(16, V))", "nn.Tanh(), nn.Linear(16, V))"))),
    ),
)

# --- squeeze() on a batch of one ------------------------------------------------------------------

SQUEEZE_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    x = torch.randn(33, 4)
    y = (x[:, 0] > 0).float()
    loader = DataLoader(TensorDataset(x, y), batch_size=8)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    sizes = []
    for xb, yb in loader:
        logits = model(xb).squeeze()
        loss = F.binary_cross_entropy_with_logits(logits, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        sizes.append(len(xb))
""")

SQUEEZE_FIXED = SQUEEZE_BUGGY.replace("model(xb).squeeze()",
                                      "model(xb).squeeze(1)    # (B, 1) -> (B,), even for B = 1")


def _squeeze_measure(run: CodeRun) -> Symptom:
    sizes, loader = run["sizes"], run["loader"]
    batches = len(loader)
    stopped = run.error is not None or len(sizes) < batches
    if stopped:
        following = min(loader.batch_size, len(loader.dataset) - sum(sizes))
        text = (f"the epoch stopped after {len(sizes)} of {batches} batches (sizes "
                f"{', '.join(map(str, sizes))}; the next holds {following}):\n{run.error_text}")
    else:
        text = f"all {batches} batches trained (sizes {', '.join(map(str, sizes))})"
    return Symptom(text, stopped, {"sizes": list(sizes), "batches": batches},
                   error=run.error_text or None)


SQUEEZE = Drill(
    id="losses.squeeze_batch_of_one",
    category="losses",
    title="squeeze() on the last batch of one sample",
    buggy_code=SQUEEZE_BUGGY,
    fixed_code=SQUEEZE_FIXED,
    measure=_squeeze_measure,
    question=shuffled_question(
        "losses.squeeze_batch_of_one",
        "The first four batches train; the fifth raises a shape error. What is different "
        "about that batch?",
        "It holds one sample, which squeeze() drops",
        ("The fifth batch's labels are all one class",
         "SGD's step changes the model's output shape",
         "The DataLoader pads the last batch with zeros"),
        "33 samples in batches of 8 leave a last batch of 1. squeeze() removes every size-1 dim, "
        "so (1, 1) logits become a 0-d tensor while the labels keep shape (1,). squeeze(1) "
        "removes only the dim you mean"),
    hints=("Print the shapes of the model's output and of the labels for every batch.",
           "Name the dim: squeeze(1) (or -1), or drop_last=True if a tiny batch is unwanted."),
    explanation="squeeze() with no argument removes every dim of size 1, the batch dim included "
                "when a batch holds one sample, and PyTorch's docs warn about exactly this. With "
                "33 samples and batch_size=8 the last batch has 1: its (1, 1) logits squeeze to a "
                "0-d tensor, the labels stay (1,), and the loss refuses the mismatch. Other losses "
                "broadcast instead and only warn. Squeeze the dim you mean: squeeze(1) or "
                "squeeze(-1).",
    source="R85 in references.md (torch.squeeze warns that squeeze() removes a batch dim of size 1)",
    variants=(
        Variant("17 samples in batches of 4",
                {"xb": "features", "yb": "labels"},
                (("torch.randn(33, 4)", "torch.randn(17, 4)"), ("batch_size=8", "batch_size=4"))),
        Variant("sigmoid then binary_cross_entropy",
                {"logits": "probs", "model": "clf"},
                (("model(xb).squeeze(1)", "torch.sigmoid(model(xb)).squeeze(1)"),
                 ("model(xb).squeeze()", "torch.sigmoid(model(xb)).squeeze()"),
                 ("F.binary_cross_entropy_with_logits(", "F.binary_cross_entropy("))),
        Variant("three classes, labels stored as a column",
                {"xb": "inputs", "yb": "targets"},
                (("y = (x[:, 0] > 0).float()", "y = x[:, :3].argmax(1, keepdim=True)"),
                 ("nn.Linear(4, 1)", "nn.Linear(4, 3)"),
                 ("logits = model(xb).squeeze(1)    # (B, 1) -> (B,), even for B = 1",
                  "logits, yb = model(xb), yb.squeeze(1)"),
                 ("logits = model(xb).squeeze()", "logits, yb = model(xb), yb.squeeze()"),
                 ("F.binary_cross_entropy_with_logits(logits, yb)", "F.cross_entropy(logits, yb)"))),
    ),
)

# --- padding scored by the loss -------------------------------------------------------------------

PAD_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    V, PAD = 10, 0
    lengths = torch.tensor([12, 5, 3, 8] * 4)
    starts = torch.randint(1, V, (16, 1))
    tokens = (starts + torch.arange(13)) % (V - 1) + 1
    tokens[torch.arange(13) > lengths[:, None]] = PAD
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    model = nn.Sequential(nn.Embedding(V, 16), nn.Linear(16, V))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    for step in range(40):
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
""")

PAD_FIXED = PAD_BUGGY.replace("targets.reshape(-1))\n",
                              "targets.reshape(-1), ignore_index=PAD)   # padding scores nothing\n")


def _pad_measure(run: CodeRun) -> Symptom:
    logits, targets, pad = run["logits"].detach(), run["targets"].reshape(-1), run["PAD"]
    keep = (targets != pad) & (targets != -100)  # padding, or padding already marked ignored
    real = torch.nn.functional.cross_entropy(logits.reshape(len(targets), -1)[keep], targets[keep]).item()
    share = 1 - keep.float().mean().item()
    reported = run["loss"].item()
    return Symptom(f"{share:.0%} of the target positions are padding; loss as computed "
                   f"{fmt(reported)}, on the real tokens {fmt(real)}", abs(reported - real) > 1e-4,
                   {"reported": reported, "real": real, "padding_share": share})


PADDING = Drill(
    id="losses.padding_in_lm_loss",
    category="losses",
    title="Padding scored by the language-model loss",
    buggy_code=PAD_BUGGY,
    fixed_code=PAD_FIXED,
    measure=_pad_measure,
    question=shuffled_question(
        "losses.padding_in_lm_loss",
        "Sequences of different lengths are padded with PAD. Which target positions does this "
        "loss average over?",
        "Every position, the padding targets included",
        ("The first sequence only, since the rest are shorter",
         "The real tokens, since cross_entropy skips padding",
         "Each sequence's mean, weighted by its length"),
        "cross_entropy scores every target unless told otherwise; here about half the targets "
        "are PAD. The model spends its fit on predicting padding, the reported loss is not the "
        "real tokens' loss, and the real tokens fit worse. ignore_index=PAD (or a mask) leaves "
        "padding out"),
    hints=("Count how many targets equal PAD.",
           "F.cross_entropy(..., ignore_index=PAD), or multiply per-token losses by a mask."),
    explanation="A padded batch holds positions that are not text. cross_entropy averages over "
                "every target it gets; its ignore_index defaults to -100, not to your padding id. "
                "So padding enters the mean and the gradient: the model learns PAD after PAD "
                "(easy) and where padding starts after a real token (which one token cannot tell "
                "it), the reported loss mixes these with the real tokens' loss, and the real "
                "tokens get a diluted share of the gradient: after the same 40 steps their loss "
                "here stays hundreds of times higher than with padding left out. Pass "
                "ignore_index=PAD or average per-token losses over a mask of real targets.",
    source="R62 in references.md (CrossEntropyLoss: ignore_index, default -100)",
    variants=(
        Variant("vocabulary 14, other lengths",
                {"model": "lm", "inputs": "x"},
                (("V, PAD = 10, 0", "V, PAD = 14, 0"), ("[12, 5, 3, 8] * 4", "[12, 2, 6, 4] * 4"))),
        Variant("the last id pads, a hidden layer",
                {"optimizer": "opt"},
                (("V, PAD = 10, 0", "V, PAD = 10, 9"), ("% (V - 1) + 1", "% (V - 1)"),
                 ("nn.Linear(16, V))", "nn.ReLU(), nn.Linear(16, V))"))),
        Variant("per-token losses and a mask",
                {"tokens": "batch"},
                (("    loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=PAD)",
                  "    per_token = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1),\n"
                  "                                reduction=\"none\")\n"
                  "    real = (targets.reshape(-1) != PAD).float()\n"
                  "    loss = (per_token * real).sum() / real.sum()"),
                 ("targets.reshape(-1))\n", "targets.reshape(-1), reduction=\"none\").mean()\n"))),
    ),
)

DRILLS = (SHIFT, CLASSDIM, SQUEEZE, PADDING)
