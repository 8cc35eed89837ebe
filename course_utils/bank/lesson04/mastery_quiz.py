"""Lesson 04's mastery quiz: the fallback variable, warn-once, host work, switches, the ops that always
fall back, round trips. Every question comes in two forms (a retry is served the other one)."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

_VARIABLE = ("the variable is read in a static initializer when the MPS library registers (R48 in "
             "references.md): set it before `import torch`.")
_ONCE = ("TORCH_WARN_ONCE at a single call site reports only the first fallback of the process unless "
         "torch.set_warn_always(True) (R48, R52 in references.md).")
_HOST = ("fallback means an op on mps tensors that has no MPS kernel; tokenization and batch assembly "
         "normally happen on the CPU (lesson 04, section 1).")
_SWITCHES = "each neighbouring pair in a different place is one switch (lesson 04, section 7)."
_ALWAYS = ("a few ops are registered to always fall back: embedding_renorm_ and linalg_svd in 2.13's "
           "MPSFallback.mm (R48 in references.md).")
_ROUND_TRIP = ("a hand-made round trip costs what a fallback costs: a copy each way and two switches per "
               "call, and the module's parameters moved with model.to() (lesson 04 measures it).")

QUIZ = Quiz("04", [
    (Question(
        "You add os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1' in a notebook cell after "
        "`import torch`. An unsupported op then runs on mps. What happens?",
        ("It falls back to the CPU with a warning, as the variable asks",
         "It still raises NotImplementedError: restart, set it first",
         "It runs on MPS more slowly, through a generic Metal kernel",
         "It falls back to the CPU silently, with the warning off"),
        1, _VARIABLE),
     Question(
        "Which way of turning the MPS fallback on works in a notebook?",
        ("Set it in any cell, then call importlib.reload(torch)",
         "Set it in os.environ in the first cell, before import torch",
         "Set it in any cell: torch reads it at the next failing op",
         "Pass enable_fallback=True when calling model.to('mps')"),
        1, _VARIABLE)),
    (Question(
        "A training script printed the MPS fallback warning once, for aten::embedding_renorm_. How "
        "many different ops fell back?",
        ("Exactly one: each op that falls back prints its own warning",
         "At least one: the warning is printed once per process",
         "None: a warning means the op ran on MPS after all",
         "One per step: the warning stands for every training step"),
        1, _ONCE),
     Question(
        "A run printed a single MPS fallback warning, for aten::linalg_svd. You call "
        "torch.set_warn_always(True) and run it again. What changes?",
        ("Fallbacks turn into errors, so the step stops at the first",
         "Nothing: the fallback warning ignores Python's settings",
         "Every fallback now warns, not only the process's first",
         "Only ops listed in MPSFallback.mm warn; the rest are silent"),
        2, _ONCE)),
    (Question(
        "Your tokenizer and collate function run on the CPU before batch.to('mps'). Is that CPU "
        "fallback?",
        ("Yes: every CPU op in an mps training script is a fallback",
         "No: fallback is an op on mps tensors with no MPS kernel",
         "Only when PYTORCH_ENABLE_MPS_FALLBACK is set in the shell",
         "Only for integer tensors, which MPS cannot hold at all"),
        1, _HOST),
     Question(
        "Your data pipeline runs a cumsum on CPU tensors, then moves the batch to mps. Is that "
        "cumsum a fallback?",
        ("Yes: it ran on the CPU, so the fallback must have sent it there",
         "Yes, whenever the fallback variable was set before torch loaded",
         "No: fallbacks happen only in backward, never in the forward",
         "No: it ran on CPU tensors; a fallback is an mps op sent away"),
        3, _HOST)),
    (Question(
        "host batch -> mps forward -> fallback op -> mps classifier -> host log. How many backend "
        "switches?",
        ("2", "3", "4", "5"),
        2, _SWITCHES + " Here cpu|mps|cpu|mps|cpu: four."),
     Question(
        "host batch -> mps encoder -> mps decoder -> fallback op -> host log. How many backend "
        "switches?",
        ("2", "3", "4", "5"),
        0, _SWITCHES + " Here cpu|mps|mps|cpu|cpu: two.")),
    (Question(
        "Without PYTORCH_ENABLE_MPS_FALLBACK, which op still runs (on the CPU) instead of raising?",
        ("aten::native_layer_norm", "aten::linalg_svd", "aten::cumsum", "aten::addmm"),
        1, _ALWAYS),
     Question(
        "Without PYTORCH_ENABLE_MPS_FALLBACK, which op still runs (on the CPU) instead of raising?",
        ("aten::index_select", "aten::embedding_renorm_", "aten::scatter_add_",
         "aten::embedding_dense_backward"),
        1, _ALWAYS)),
    (Question(
        "Circulating advice suggests `return self.norm(x.cpu()).to(device)` for a 'safe' LayerNorm. "
        "After model.to('mps'), what is wrong with it?",
        ("Nothing: it is the usual workaround for LayerNorm on MPS",
         "Copies both ways per call, and it fails: the weights are on mps",
         "LayerNorm has no CPU kernel, so the call raises at once",
         "It works only when both the model and x are in float64"),
        1, _ROUND_TRIP),
     Question(
        "A helper computes `F.layer_norm(x.cpu(), shape).to(x.device)` (no weights) inside an mps "
        "model's forward. It runs. What does it cost per call?",
        ("Two copies and two switches: a fallback made by hand",
         "Nothing: unified memory makes .cpu() and .to() free views",
         "One copy only: .to(x.device) reuses the buffer of .cpu()",
         "Only a sync: copies are queued like any other kernel"),
        0, _ROUND_TRIP)),
])
