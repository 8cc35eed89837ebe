"""Fix-it cases of the devices, memory, attention, performance, distributed and seed-advice drills.

The same three tables as ``fixit_cases``, which merges these into its own: ``FIXIT`` (other correct
fixes, as (old, new) edits of the buggy code, and a ``job`` check from ``fixit_jobs``), ``DODGES``
(each drill's own degenerate edits, (label, old, new), which its mutant table must reject) and
``EQUIVALENT``. The dodges are the edits a learner racing the clock might try: the feature dropped
(checkpointing, the positional encoding, the LayerNorms), a device written into ``forward()``, the
symptom hidden (NaN weights zeroed, overflowed scores clamped, a transfer made with ``copy_``), or
the measured input changed (smaller activations, one head, a shard reshuffled).
"""

from __future__ import annotations

from course_utils.drills.fixit_jobs import (
    attention_matches_module,
    normalises_where_it_lives,
    one_graph_same_results,
    runs_on_every_device,
    same_dtypes,
    same_shares,
    still_checkpointed,
)

# the frequencies as a buffer, which model.to() moves; the positions made on the input's device
BUFFER_OLD = """\
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):
        h = self.embed(ids)
        dim = h.shape[-1]
        positions = torch.arange(ids.shape[1]).unsqueeze(1)
        freqs = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))
        angles = positions * freqs
"""
BUFFER_NEW = """\
        self.out = nn.Linear(dim, vocab)
        self.register_buffer("freqs", torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim)))

    def forward(self, ids):
        h = self.embed(ids)
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(1)
        angles = positions * self.freqs
"""
FACTORIES = ("positions = torch.arange(ids.shape[1]).unsqueeze(1)\n"
             "        freqs = torch.exp(torch.arange(0, dim, 2) * (-math.log(10000.0) / dim))")
ENCODING = "h = h + torch.cat([angles.sin(), angles.cos()], dim=-1)"
ATTEND = "    return F.softmax(scores, dim=-1) @ v\n"
SCORES = "scores = q @ k.transpose(-2, -1) / math.sqrt(D)"
BRANCH = "    if y.mean().item() > 0.5:\n        y = y * 2\n"
ROUND_TRIP = "return self.norm(x.cpu()).to(device)"

FIXIT: dict[str, dict] = {
    "devices.tensor_created_in_forward": {
        "other_fixes": (
            (FACTORIES, FACTORIES.replace(".unsqueeze(1)", ".unsqueeze(1).to(ids.device)")
             .replace("/ dim))", "/ dim)).to(h.device)")),
            (ENCODING, ENCODING + ".to(h.device)"),
            (BUFFER_OLD, BUFFER_NEW),
        ),
        "job": runs_on_every_device,
    },
    "memory.checkpoint_no_grad_input": {
        "other_fixes": (("x = torch.randn(8, 32)", "x = torch.randn(8, 32).requires_grad_()"),),
        "job": still_checkpointed,
    },
    "attention.no_causal_mask": {
        "other_fixes": (
            ("    scores = q @ k.transpose(-2, -1) / math.sqrt(D)\n" + ATTEND,
             "    return F.scaled_dot_product_attention(q, k, v, is_causal=True)\n"),
            (ATTEND, "    future = torch.full(scores.shape[-2:], float('-inf')).triu(1)\n"
                     "    return F.softmax(scores + future, dim=-1) @ v\n"),
        ),
    },
    "attention.causal_mask_reversed": {
        "other_fixes": (("keep == 1,", "~keep.bool(),"),
                        ("keep = torch.tril(torch.ones(S, S))",
                         "keep = torch.triu(torch.ones(S, S), diagonal=1)"),
                        ('scores = scores.masked_fill(keep == 1, float("-inf"))',
                         'scores = torch.where(keep.bool(), scores, float("-inf"))')),
        "intermediates": ("keep",),  # the mask may mark the blocked keys instead of the visible ones
    },
    "attention.heads_split_by_view": {
        "other_fixes": (("return t.view(B, H, S, E // H)",
                         "return t.view(B, S, H, E // H).permute(0, 2, 1, 3)"),
                        ("return t.view(B, H, S, E // H)",
                         "return t.unflatten(-1, (H, E // H)).transpose(1, 2)")),
        "job": attention_matches_module,
    },
    "attention.fp16_scores_overflow": {
        "other_fixes": (
            (SCORES, "scores = (q.float() @ k.float().transpose(-2, -1) / math.sqrt(D)).half()"),
            (f"{SCORES}\nweights = F.softmax(scores, dim=-1)\nout = weights @ v",
             "scores = q.float() @ k.float().transpose(-2, -1) / math.sqrt(D)\n"
             "weights = F.softmax(scores, dim=-1)\nout = (weights @ v.float()).half()"),
        ),
        "job": same_dtypes("q", "k", "v", "out"),
    },
    "performance.compile_graph_break": {
        "other_fixes": (
            (BRANCH, "    y = y * (1 + (y.mean() > 0.5).to(y.dtype))\n"),
            (BRANCH, "    y = torch.cond(y.mean() > 0.5, lambda t: t * 2, lambda t: t.clone(), (y,))\n"),
        ),
        "job": one_graph_same_results,
    },
    "distributed.sampler_without_set_epoch": {
        "other_fixes": (
            ("    for (batch,) in loader:",
             "    loader.sampler.set_epoch(epoch)\n    for (batch,) in loader:"),
            ("    orders.append(order)", "    orders.append(order)\n    sampler.set_epoch(epoch + 1)"),
        ),
        "job": same_shares,
    },
    "seed.layernorm_cpu_round_trip": {
        "other_fixes": ((ROUND_TRIP, "return self.norm(x)"),
                        ("SafeLayerNorm(64))", "nn.LayerNorm(64))")),
        "job": normalises_where_it_lives,
    },
}

DODGES: dict[str, tuple[tuple[str, str, str], ...]] = {
    "devices.tensor_created_in_forward": (
        ("model and input kept on the CPU",
         'model = Encoder(50, 16).to("meta")\nids = torch.randint(0, 50, (2, 8)).to("meta")',
         "model = Encoder(50, 16)\nids = torch.randint(0, 50, (2, 8))"),
        ("the device written into forward()", FACTORIES,
         FACTORIES.replace("arange(ids.shape[1])", 'arange(ids.shape[1], device="meta")')
         .replace("arange(0, dim, 2)", 'arange(0, dim, 2, device="meta")')),
        ("the positional encoding dropped", ENCODING, "h = h"),
        ("the encoding replaced by zeros", ENCODING, "h = h + torch.zeros_like(h)"),
    ),
    "memory.checkpoint_no_grad_input": (
        ("checkpointing dropped", "checkpoint(block1, x, use_reentrant=True)", "block1(x)"),
        ("a zero-weighted term gives block1 a gradient", "loss = block2(h).pow(2).mean()",
         "loss = block2(h).pow(2).mean() + 0 * block1(x).sum()"),
        ("checkpointing dropped, block1 run twice", "h = checkpoint(block1, x, use_reentrant=True)",
         "h = block1(x)\nblock1(x)"),
        ("a second, unchecked pass through block1", "loss = block2(h).pow(2).mean()",
         "loss = block2(h).pow(2).mean() + 1e-6 * block1(x).sum()"),
    ),
    "attention.no_causal_mask": (
        ("each position sees only itself", ATTEND,
         "    own = torch.eye(x.shape[1], dtype=torch.bool)\n"
         "    return F.softmax(scores.masked_fill(~own, float('-inf')), dim=-1) @ v\n"),
        ("future weights zeroed after softmax", ATTEND,
         "    return (F.softmax(scores, dim=-1) * torch.ones_like(scores).tril()) @ v\n"),
        ("only the last token masked", ATTEND, "    scores[..., :-1, -1] = float('-inf')\n" + ATTEND),
        ("every score masked", ATTEND,
         "    return F.softmax(torch.full_like(scores, float('-inf')), dim=-1) @ v\n"),
    ),
    "attention.causal_mask_reversed": (
        ("each query sees only itself", "keep = torch.tril(torch.ones(S, S))\n"
         "scores = scores.masked_fill(keep == 1,",
         "keep = torch.eye(S)\nscores = scores.masked_fill(keep == 0,"),
        ("the mask transposed, the NaN row zeroed",
         'keep == 1, float("-inf"))\nweights = F.softmax(scores, dim=-1)',
         'keep.T == 1, float("-inf"))\nweights = F.softmax(scores, dim=-1).nan_to_num(0.0)'),
        ("no mask at all", "keep == 1,", "keep == 2,"),
    ),
    "attention.heads_split_by_view": (
        ("one head, so the split changes nothing", "B, S, E, H = 2, 4, 8, 2", "B, S, E, H = 2, 4, 8, 1"),
        ("the output taken from nn.MultiheadAttention", "out = attention(x)", "out = mha(x, x, x)[0]"),
        ("the heads split by reshape", "t.view(B, H, S, E // H)", "t.reshape(B, H, S, E // H)"),
    ),
    "attention.fp16_scores_overflow": (
        ("smaller inputs", "x = torch.randn(1, S, D) * 40", "x = torch.randn(1, S, D) * 4"),
        ("scores scaled towards 0", SCORES,
         "scores = (q * 1e-3) @ (k * 1e-3).transpose(-2, -1) / math.sqrt(D)"),
        ("the overflow clamped to float16's maximum", SCORES,
         "scores = (q @ k.transpose(-2, -1)).nan_to_num() / math.sqrt(D)"),
        ("NaN weights zeroed", "weights = F.softmax(scores, dim=-1)",
         "weights = F.softmax(scores, dim=-1).nan_to_num(0.0)"),
        ("the output left in float32", f"{SCORES}\nweights = F.softmax(scores, dim=-1)\nout = weights @ v",
         "scores = q.float() @ k.float().transpose(-2, -1) / math.sqrt(D)\n"
         "weights = F.softmax(scores, dim=-1)\nout = weights @ v.float()"),
        ("only the softmax in float32", "weights = F.softmax(scores, dim=-1)",
         "weights = F.softmax(scores.float(), dim=-1).half()"),
    ),
    "performance.compile_graph_break": (
        ("a constant returned by step()", BRANCH + "    return (y @ w).sum()", "    return torch.zeros(())"),
        ("the branch dropped", BRANCH, ""),
        ("the branch always taken", "    if y.mean().item() > 0.5:\n", "    if True:\n"),
        ("another function explained", "explain(step)",
         "explain(lambda x, w: (torch.relu(x @ w) @ w).sum())"),
        ("step kept out of compilation", "def step(x, w):", "@torch._dynamo.disable\ndef step(x, w):"),
    ),
    "distributed.sampler_without_set_epoch": (
        ("shuffle=False", "shuffle=True", "shuffle=False"),
        ("set_epoch inside the batch loop (too late for its epoch)", "        order += batch.tolist()",
         "        sampler.set_epoch(epoch)\n        order += batch.tolist()"),
        ("set_epoch after the epoch's batches", "    orders.append(order)",
         "    orders.append(order)\n    sampler.set_epoch(epoch)"),
        ("a constant order each epoch (the epoch number)", "    orders.append(order)",
         "    orders.append([epoch] * len(order))"),
        ("the rank's own share reshuffled each epoch", "    orders.append(order)",
         "    orders.append([order[i] for i in torch.randperm(len(order))])"),
        ("each rank shuffles the whole dataset (RandomSampler)",
         "DistributedSampler(dataset, num_replicas=2, rank=0, shuffle=True, seed=0)",
         "torch.utils.data.RandomSampler(dataset)"),
        ("a random epoch number on each rank", "    order = []\n",
         "    order = []\n    sampler.set_epoch(int(torch.randint(1000, ())))\n"),
    ),
    "seed.layernorm_cpu_round_trip": (
        ("forward returns its input", ROUND_TRIP, "return x"),
        ("the round trip done with copy_", ROUND_TRIP,
         'y = self.norm(torch.empty_like(x, device="cpu").copy_(x))\n'
         "        return torch.empty_like(y, device=device).copy_(y)"),
        ("the input detached", ROUND_TRIP, "return self.norm(x.detach())"),
        ("the norm layers removed", "nn.Sequential(nn.Linear(64, 64), SafeLayerNorm(64))",
         "nn.Linear(64, 64)"),
    ),
}

EQUIVALENT: dict[str, dict[str, str]] = {}
