"""Attention bugs (lesson 07): the padding mask applied after softmax."""

from __future__ import annotations

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, shuffled_question

AFTER_BUGGY = code("""
    import math
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    B, S, D = 2, 5, 8
    q, k, v = torch.randn(B, S, D), torch.randn(B, S, D), torch.randn(B, S, D)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])   # 1 = token, 0 = padding
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    weights = F.softmax(scores, dim=-1)
    weights = weights * mask[:, None, :]                       # drop padding ... after softmax
    out = weights @ v
""")

AFTER_FIXED = AFTER_BUGGY.replace(
    "weights = F.softmax(scores, dim=-1)\n"
    "weights = weights * mask[:, None, :]                       # drop padding ... after softmax\n",
    "scores = scores.masked_fill(mask[:, None, :] == 0, float(\"-inf\"))   # before softmax\n"
    "weights = F.softmax(scores, dim=-1)\n")


def _after_measure(run: CodeRun) -> Symptom:
    weights, mask = run["weights"], run["mask"]
    sums = weights.sum(-1)[1]
    off = (weights.sum(-1) - 1).abs().max().item()
    buggy = off > 1e-5
    lo, hi = sums.min().item(), sums.max().item()
    text = (f"sequence 2's attention rows sum to {lo:.2f}..{hi:.2f}, not 1" if buggy else
            "every attention row sums to 1")
    padding = (weights * (mask[:, None, :] == 0)).abs().max().item()
    text += f"; largest weight on a padding key: {padding:.2f}"

    pads = int((mask[1] == 0).sum())
    pads_text = {1: "last one is", 2: "last two are", 3: "last three are"}.get(pads, f"last {pads} are")

    def plot(ax):
        ax.imshow(weights[1].detach(), vmin=0, vmax=1, cmap="viridis")
        ax.set(xlabel=f"key ({pads_text} padding)", ylabel="query",
               title="sequence 2's attention weights")

    return Symptom(text, buggy, {"max_row_error": off, "padding_weight": padding}, plot=plot)


AFTER = Drill(
    id="attention.mask_after_softmax",
    category="attention",
    title="The padding mask applied after softmax",
    buggy_code=AFTER_BUGGY,
    fixed_code=AFTER_FIXED,
    measure=_after_measure,
    question=shuffled_question(
        "attention.mask_after_softmax",
        "Scores for the padding keys are set to zero after the softmax, yet the outputs at real positions "
        "differ from a run without the padding. Why?",
        "The padded keys already took their share of the normaliser",
        ("Multiplying by the mask breaks autograd's graph",
         "softmax over a batch mixes the sequences together",
         "Zeroed padding is re-normalised by the value projection"),
        "mask the scores with -inf before softmax: exp(-inf) = 0, so padding takes no "
        "probability and the real keys' weights sum to 1"),
    hints=("Sum each row of weights for the padded sequence.",
           "scores.masked_fill(mask[:, None, :] == 0, float('-inf')) before the softmax."),
    explanation="softmax normalised over all keys, padding included; zeroing the padding "
                "afterwards leaves rows that sum to less than 1, by an amount that depends on "
                "the padding, so outputs shrink with the padding ratio. Fill padding scores with "
                "-inf before softmax: padding gets exactly 0 and the rest sums to 1.",
    source="R36 in references.md (scaled_dot_product_attention: the mask acts on the scores, "
           "before softmax)",
    exercise="07.masked_attention",
    variants=(
        Variant("6 tokens, head size 4",
                edits=(("B, S, D = 2, 5, 8", "B, S, D = 2, 6, 4"),
                       ("torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])",
                        "torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])"))),
        Variant("the mask built from lengths",
                {"q": "query", "k": "key", "v": "value"},
                (("mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])",
                  "lengths = torch.tensor([5, 2])\nmask = (torch.arange(S) < lengths[:, None]).long()"),)),
        Variant("3 sequences, softmax as a method, zeroed with masked_fill",
                {"out": "context"},
                (("B, S, D = 2, 5, 8", "B, S, D = 3, 5, 8"),
                 ("torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])",
                  "torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])"),
                 ("F.softmax(scores, dim=-1)", "scores.softmax(dim=-1)"),
                 ("weights = weights * mask[:, None, :]",
                  "weights = weights.masked_fill(mask[:, None, :] == 0, 0.0)"))),
    ),
)

DRILLS = (AFTER,)
