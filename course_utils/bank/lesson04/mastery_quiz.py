"""Lesson 04's mastery quiz: the fallback variable, warn-once, host work, switches, round trips."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("04", [
    Question(
        "You add os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1' in a notebook cell after "
        "`import torch`. An unsupported op then runs on mps. What happens?",
        ("It falls back to the CPU with a warning", "It still raises NotImplementedError: the "
         "variable was read when torch loaded, so restart the kernel and set it first",
         "It runs on MPS more slowly", "It falls back silently"),
        1, "the variable is read in a static initializer when the MPS library registers (R48 in "
        "references.md)."),
    Question(
        "A training script printed the MPS fallback warning once, for aten::col2im. How many "
        "different ops fell back?",
        ("Exactly one", "At least one: the warning is printed once per process, so later "
         "fallbacks are silent unless torch.set_warn_always(True)", "None: it was only a warning",
         "One per training step"),
        1, "TORCH_WARN_ONCE at a single call site reports only the first fallback (R48, R52 in "
        "references.md)."),
    Question(
        "Your tokenizer and collate function run on the CPU before batch.to('mps'). Is that CPU "
        "fallback?",
        ("Yes, every CPU op is a fallback", "No: fallback means an op on mps tensors that has no "
         "MPS kernel; host work before the move is normal", "Only if the variable is set",
         "Only for integer tensors"),
        1, "tokenization and batch assembly normally happen on the CPU (lesson 04, section 1)."),
    Question(
        "host batch -> mps forward -> fallback op -> mps classifier -> host log. How many backend "
        "switches?",
        ("2", "3", "4", "5"),
        2, "each neighbouring pair in a different place is one switch: cpu|mps|cpu|mps|cpu "
        "(lesson 04, section 7)."),
    Question(
        "Without PYTORCH_ENABLE_MPS_FALLBACK, which op still runs (on the CPU) instead of raising?",
        ("aten::addmm", "aten::linalg_svd", "aten::relu", "aten::cumsum"),
        1, "a few ops are registered to always fall back: embedding_renorm_ and linalg_svd in 2.13's "
        "MPSFallback.mm (R48 in references.md)."),
    Question(
        "Circulating advice suggests `return self.norm(x.cpu()).to(device)` for a 'safe' LayerNorm. "
        "After "
        "model.to('mps'), what is wrong with it?",
        ("Nothing, it is the recommended fix", "It copies x both ways on every call (two switches) "
         "and, as written, fails: the LayerNorm weights are on mps while x is on the cpu",
         "LayerNorm has no CPU kernel", "It only works in float64"),
        1, "a hand-made round trip costs what a fallback costs, and the module's parameters moved "
        "with model.to() (lesson 04 measures it)."),
])
