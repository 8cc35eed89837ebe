"""Attention bugs of sequence models (lesson 08's timed drills): no causal mask in a decoder, a
causal mask that points the wrong way, heads split with one view, float16 scores that overflow."""

from __future__ import annotations

import torch

from course_utils.drills.core import CodeRun, Drill, Symptom, Variant, code, fmt, shuffled_question

# --- a decoder's self-attention with no causal mask ----------------------------------------------

FUTURE_BUGGY = code("""
    import math
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    B, S, D = 1, 6, 8
    tokens = torch.randn(B, S, D)
    w_q, w_k, w_v = (torch.randn(D, D) / math.sqrt(D) for _ in range(3))


    def decoder_attention(x):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)
        return F.softmax(scores, dim=-1) @ v


    out = decoder_attention(tokens)
""")

FUTURE_FIXED = FUTURE_BUGGY.replace(
    "    return F.softmax(scores, dim=-1) @ v\n",
    "    causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()   # i sees 0..i\n"
    "    scores = scores.masked_fill(~causal, float(\"-inf\"))\n"
    "    return F.softmax(scores, dim=-1) @ v\n")


def _future_measure(run: CodeRun) -> Symptom:
    attend, x = run["decoder_attention"], run["tokens"]
    edited = x.clone()
    edited[:, -1] += 1.0
    with torch.no_grad():
        gap = (attend(edited)[:, :-1] - attend(x)[:, :-1]).abs().max().item()
    seen = gap > 1e-6
    last = x.shape[1]
    verdict = "they read the future" if seen else "no earlier position can see it"
    return Symptom(f"editing token {last} moves the outputs at positions 1-{last - 1} by up to "
                   f"{fmt(gap)} ({verdict})", seen, {"gap": gap})


FUTURE = Drill(
    id="attention.no_causal_mask",
    category="attention",
    title="A decoder's self-attention without a causal mask",
    buggy_code=FUTURE_BUGGY,
    fixed_code=FUTURE_FIXED,
    measure=_future_measure,
    question=shuffled_question(
        "attention.no_causal_mask",
        "This attention serves a next-token model. Training loss drops fast, yet generation is "
        "poor. What does the code let the model do?",
        "Every position attends to all the tokens after it",
        ("Each position attends only to its own token",
         "The 1/sqrt(D) scale flattens every attention row",
         "softmax over the last dim mixes the batch's sequences"),
        "with no mask, query t weighs every key, later ones included; in training the next token is "
        "in view, so predicting it is trivial. Generation has no future to read"),
    hints=("Change the last token and compare the outputs of the earlier positions.",
           "Fill the scores above the diagonal with -inf before softmax (or is_causal=True)."),
    explanation="A next-token model must predict token t+1 from tokens 0..t. Without a causal "
                "mask every query attends to all keys, so the output at position t already "
                "contains the token it must predict: training loss falls by copying, and the "
                "model fails at generation, where no future exists. Mask the scores above the "
                "diagonal with -inf (torch.ones(S, S, dtype=torch.bool).tril() marks what each "
                "query may see), or pass is_causal=True to scaled_dot_product_attention.",
    source="R36 in references.md (scaled_dot_product_attention: is_causal applies a lower-triangular "
           "mask)",
    variants=(
        Variant("two sequences of 8 tokens, width 16",
                {"tokens": "embeddings", "decoder_attention": "self_attend"},
                (("B, S, D = 1, 6, 8", "B, S, D = 2, 8, 16"),)),
        Variant("one nn.Linear makes q, k and v",
                {"tokens": "h", "out": "y"},
                (("import torch.nn.functional as F\n",
                  "import torch.nn.functional as F\nfrom torch import nn\n"),
                 ("w_q, w_k, w_v = (torch.randn(D, D) / math.sqrt(D) for _ in range(3))",
                  "qkv = nn.Linear(D, 3 * D)"),
                 ("q, k, v = x @ w_q, x @ w_k, x @ w_v", "q, k, v = qkv(x).chunk(3, dim=-1)"))),
        Variant("scaled_dot_product_attention",
                {"decoder_attention": "causal_lm_attention"},
                (("    causal = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()   # i sees 0..i\n"
                  "    scores = scores.masked_fill(~causal, float(\"-inf\"))\n"
                  "    return F.softmax(scores, dim=-1) @ v\n",
                  "    return F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"),
                 ("    scores = q @ k.transpose(-2, -1) / math.sqrt(D)\n", ""),
                 ("    return F.softmax(scores, dim=-1) @ v\n",
                  "    return F.scaled_dot_product_attention(q, k, v)\n"))),
    ),
)

# --- the causal mask reversed ---------------------------------------------------------------------

REVERSED_BUGGY = code("""
    import math
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    B, S, D = 1, 5, 8
    q, k, v = torch.randn(B, S, D), torch.randn(B, S, D), torch.randn(B, S, D)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    keep = torch.tril(torch.ones(S, S))
    scores = scores.masked_fill(keep == 1, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    out = weights @ v
""")

REVERSED_FIXED = REVERSED_BUGGY.replace("keep == 1,", "keep == 0,")


def _reversed_measure(run: CodeRun) -> Symptom:
    weights = run["weights"].detach()
    nan_row = weights.isnan().any(-1)
    later = weights.triu(1).sum(-1).masked_fill(nan_row, float("nan"))
    nan_rows = int(nan_row.sum())
    rows = weights.shape[-2] * weights[..., 0, 0].numel()
    shown = ", ".join(fmt(w, 2) for w in later.reshape(-1, later.shape[-1])[0].tolist())
    buggy = nan_rows > 0 or later.nan_to_num().max().item() > 1e-6
    return Symptom(f"weight each query (sequence 1) puts on later tokens: {shown}"
                   f"\nrows that are NaN: {nan_rows} of {rows}", buggy,
                   {"later": later.tolist(), "nan_rows": nan_rows})


REVERSED = Drill(
    id="attention.causal_mask_reversed",
    category="attention",
    title="A causal mask that blocks the past",
    buggy_code=REVERSED_BUGGY,
    fixed_code=REVERSED_FIXED,
    measure=_reversed_measure,
    question=shuffled_question(
        "attention.causal_mask_reversed",
        "This is meant to be causal self-attention. Look at which scores get -inf: what happens "
        "to the first and the last query?",
        "The first sees only later tokens and the last is NaN",
        ("The first sees only itself, and the last sees every token",
         "Nothing, masked_fill with -inf keeps each row summing to 1",
         "Both attend to themselves only, so the output copies v"),
        "masked_fill writes -inf where its mask is True. tril marks what a query may see, so "
        "filling where it is 1 blocks the past and the diagonal: the first query sees only the "
        "future, and the last query has no key left, so its softmax is 0/0 = NaN"),
    hints=("Print weights[0]: where is the weight, above or below the diagonal?",
           "masked_fill fills where the mask is True: the True entries must be the ones to block."),
    explanation="tril(ones) marks the keys each query may see (itself and earlier tokens). "
                "masked_fill puts -inf where its mask is True, so the fill must go where that "
                "marker is 0. Filled where it is 1, the mask blocks the past and the diagonal: "
                "each query attends only to later tokens, and the last query, with every key "
                "blocked, gets softmax over all -inf, which is NaN. Conventions differ: a boolean "
                "attn_mask for scaled_dot_product_attention marks with True what may be attended, "
                "the opposite of masked_fill.",
    source="R36 in references.md (scaled_dot_product_attention: a boolean mask's True entries "
           "take part in attention)",
    variants=(
        Variant("triu(diagonal=1) marks the blocked keys",
                {"keep": "block"},
                (("torch.tril(torch.ones(S, S))", "torch.triu(torch.ones(S, S), diagonal=1)"),
                 ("keep == 0,", "keep.bool(),"),
                 ("keep == 1,", "keep == 0,"))),
        Variant("a boolean mask from arange, 7 tokens",
                {"keep": "visible", "scores": "logits"},
                (("torch.tril(torch.ones(S, S))", "torch.arange(S)[:, None] >= torch.arange(S)"),
                 ("B, S, D = 1, 5, 8", "B, S, D = 1, 7, 8"),
                 ("keep == 0,", "~keep,"),
                 ("keep == 1,", "keep,"))),
        Variant("two sequences, width 16",
                {"out": "context", "q": "query", "k": "key", "v": "value"},
                (("B, S, D = 1, 5, 8", "B, S, D = 2, 6, 16"),)),
    ),
)

# --- heads split with one view -------------------------------------------------------------------

HEADS_BUGGY = code("""
    import torch
    import torch.nn.functional as F
    from torch import nn

    torch.manual_seed(0)
    B, S, E, H = 2, 4, 8, 2
    mha = nn.MultiheadAttention(E, H, bias=False, batch_first=True)
    x = torch.randn(B, S, E)
    w_q, w_k, w_v = mha.in_proj_weight.chunk(3)


    def split_heads(t):
        return t.view(B, H, S, E // H)


    def attention(x):
        q, k, v = split_heads(x @ w_q.T), split_heads(x @ w_k.T), split_heads(x @ w_v.T)
        weights = F.softmax(q @ k.transpose(-2, -1) / (E // H) ** 0.5, dim=-1)
        merged = (weights @ v).transpose(1, 2).reshape(B, S, E)
        return merged @ mha.out_proj.weight.T


    with torch.no_grad():
        out = attention(x)
""")

HEADS_FIXED = HEADS_BUGGY.replace("return t.view(B, H, S, E // H)",
                                  "return t.view(B, S, H, E // H).transpose(1, 2)   # (B, H, S, E/H)")


def _heads_measure(run: CodeRun) -> Symptom:
    mha, x = run["mha"], run["x"]
    with torch.no_grad():
        reference = mha(x, x, x, need_weights=False)[0]
    gap = (run["out"] - reference).abs().max().item()
    buggy = gap > 1e-5
    return Symptom(f"largest gap to nn.MultiheadAttention with the same weights: {fmt(gap)} "
                   f"(outputs up to {fmt(reference.abs().max().item())})", buggy, {"gap": gap})


HEADS = Drill(
    id="attention.heads_split_by_view",
    category="attention",
    title="Attention heads split with one view",
    buggy_code=HEADS_BUGGY,
    fixed_code=HEADS_FIXED,
    measure=_heads_measure,
    question=shuffled_question(
        "attention.heads_split_by_view",
        "This hand-written multi-head attention runs and has the right output shape, but does "
        "not match nn.MultiheadAttention with the same weights. Why?",
        "split_heads mixes tokens across heads with its view",
        ("The weights must be transposed back before the merge",
         "softmax needs dim=-2 when heads come before tokens",
         "The scale should be E ** -0.5, not (E // H) ** -0.5"),
        "view only reinterprets memory laid out (B, S, E): reading it as (B, H, S, E/H) puts "
        "pieces of different tokens into one head's rows. view(B, S, H, E/H).transpose(1, 2) keeps "
        "each token's slice together"),
    hints=("Compare q[0, 0] of one head with the slice of token 0 it should hold.",
           "Split the feature dim where it lives: view(B, S, H, E // H), then move H forward."),
    explanation="A (B, S, E) tensor stores each token's E features next to each other. "
                "view(B, H, S, E // H) only reinterprets that memory: its 'head 0' holds the "
                "first S * E / H numbers, which are whole tokens, not the first E / H features of "
                "every token, so each head attends over a scrambled sequence. No error: the shape "
                "is right. view(B, S, H, E // H).transpose(1, 2) splits the features and then "
                "moves the head dim forward, which is what nn.MultiheadAttention does.",
    source="R57 in references.md (view and transpose reinterpret or reorder the same storage)",
    variants=(
        Variant("one sequence of 6 tokens, 3 heads",
                {"x": "hidden", "mha": "attn_layer"},
                (("B, S, E, H = 2, 4, 8, 2", "B, S, E, H = 1, 6, 12, 3"),)),
        Variant("reshape instead of view",
                {"mha": "layer"},
                (("t.view(B, S, H, E // H)", "t.reshape(B, S, H, E // H)"),
                 ("t.view(B, H, S, E // H)", "t.reshape(B, H, S, E // H)"))),
        Variant("4 heads of width 4, a scale variable",
                {"x": "embeddings", "weights": "probs", "merged": "joined"},
                (("B, S, E, H = 2, 4, 8, 2", "B, S, E, H = 2, 5, 16, 4\nscale = (E // H) ** -0.5"),
                 ("/ (E // H) ** 0.5", "* scale"))),
    ),
)

# --- float16 attention scores that overflow ------------------------------------------------------

OVERFLOW_BUGGY = code("""
    import math
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    S, D = 6, 64
    x = torch.randn(1, S, D) * 40
    q, k, v = x.half(), x.half(), torch.randn(1, S, D).half()
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)
    weights = F.softmax(scores, dim=-1)
    out = weights @ v
""")

OVERFLOW_FIXED = OVERFLOW_BUGGY.replace(
    "scores = q @ k.transpose(-2, -1) / math.sqrt(D)\nweights = F.softmax(scores, dim=-1)\n",
    "scores = (q / math.sqrt(D)) @ k.transpose(-2, -1)       # scale before the float16 matmul\n"
    "weights = F.softmax(scores.float(), dim=-1).half()      # softmax in float32\n")


def _overflow_measure(run: CodeRun) -> Symptom:
    scores, weights = run["scores"], run["weights"]
    infs = int(scores.isinf().sum())
    nan_rows = int(weights.isnan().any(-1).sum())
    biggest = scores.float().abs().nan_to_num(posinf=float("inf")).max().item()
    rows = weights.numel() // weights.shape[-1]
    buggy = nan_rows > 0 or not bool(run["out"].isfinite().all())
    return Symptom(f"largest |score| {fmt(biggest)} (float16 holds up to 65504); {infs} of "
                   f"{scores.numel()} scores inf, {nan_rows} of {rows} attention rows NaN", buggy,
                   {"inf_scores": infs, "nan_rows": nan_rows})


OVERFLOW = Drill(
    id="attention.fp16_scores_overflow",
    category="attention",
    title="float16 attention scores that overflow",
    buggy_code=OVERFLOW_BUGGY,
    fixed_code=OVERFLOW_FIXED,
    measure=_overflow_measure,
    question=shuffled_question(
        "attention.fp16_scores_overflow",
        "With half-precision q, k and v, some attention rows come out NaN although every input "
        "is finite. Where does the first non-finite value appear?",
        "In q @ k^T, where a dot product exceeds 65504",
        ("In softmax, since float16 cannot hold any weight below 1e-4",
         "In .half(), as activations of size 40 overflow float16",
         "In weights @ v, from summing many float16 terms"),
        "an aligned query and key of size ~40 in 64 dims give a dot product near 40^2 * 64 = "
        "102400, above float16's 65504, so the matmul writes inf; dividing by sqrt(D) afterwards "
        "keeps it inf, and softmax of a row holding inf computes inf - inf = NaN"),
    hints=("Print scores.abs().max() and torch.finfo(torch.float16).max.",
           "Scale q before the matmul, or compute scores and softmax in float32."),
    explanation="float16's largest finite value is 65504. A dot product of a query and a key of "
                "size ~40 over 64 dims reaches about 100000, so the float16 matmul stores inf; "
                "the 1/sqrt(D) scale comes too late, since inf / 8 is still inf. softmax subtracts "
                "the row's maximum (inf - inf = NaN) and the whole row turns NaN. Scale q (or q "
                "and k) before the matmul and compute the softmax in float32 (on these inputs "
                "F.scaled_dot_product_attention stayed finite in our CPU run); bfloat16 has "
                "float32's range and avoids the overflow, at lower precision.",
    source="R68, R36 in references.md (float16's range; the 1/sqrt(d) scale of "
           "scaled_dot_product_attention)",
    variants=(
        Variant("head width 128, activations of size 30",
                {"x": "hidden"},
                (("S, D = 6, 64", "S, D = 5, 128"), ("* 40", "* 30"))),
        Variant("einsum for the scores",
                {"weights": "attn", "out": "mixed"},
                (("(q / math.sqrt(D)) @ k.transpose(-2, -1)",
                  "torch.einsum(\"bqd,bkd->bqk\", q / math.sqrt(D), k)"),
                 ("q @ k.transpose(-2, -1) / math.sqrt(D)",
                  "torch.einsum(\"bqd,bkd->bqk\", q, k) / math.sqrt(D)"))),
        Variant("no scale at all, two sequences",
                {"x": "acts", "out": "result"},
                (("torch.randn(1, S, D)", "torch.randn(2, S, D)"),
                 ("scores = q @ k.transpose(-2, -1) / math.sqrt(D)",
                  "scores = torch.matmul(q, k.transpose(-2, -1))"))),
    ),
)

DRILLS = (FUTURE, REVERSED, HEADS, OVERFLOW)
