"""Checkpoint 3: the forward stays on the device."""

import torch

from course_utils.bank.lesson08._shared import (
    ALTERNATIVES,
    COMMON,
    EQUIVALENT,
    HAUNTED,
    broken,
    judge_with,
    loss_only,
)
from course_utils.core.exercise import Exercise
from course_utils.labs.capstone import TagModel, check_fallback


class CpuRenormModel(TagModel):
    """A "fix" of the fallback: do max_norm's renorm by hand, on the CPU, inside the forward."""

    def forward(self, ids):
        with torch.no_grad():
            table = self.embed.weight.detach().cpu()
            table = table * (1.0 / (table.norm(dim=1, keepdim=True) + 1e-7)).clamp(max=1.0)
            self.embed.weight.copy_(table.to(self.embed.weight.device))
        return super().forward(ids)


EXERCISE = Exercise(
    id="08.capstone_fallback",
    title="Checkpoint 3: the forward stays on the device",
    judge=judge_with(check_fallback),
    hints=(
        "Trace one forward under emulate_fallback(device='cpu') (lesson 04): which op has no MPS "
        "kernel, and which argument of the model asks for it?",
        "nn.Embedding(max_norm=...) calls embedding_renorm_, an op MPS always runs on the CPU "
        "(R48 in references.md). Build the model without max_norm.",
        "Keep what max_norm did with ops that have MPS kernels, outside the forward: scale rows "
        "longer than 1 back to norm 1 after each step (norm, clamp, mul_). Moving the table to "
        "the CPU yourself is the same round trip.",
    ),
    mutants={
        **HAUNTED,
        "keeps max_norm=1.0": broken(  # and so no clip_rows_, before the loop or after each step
            ("TagModel()", "TagModel(max_norm=1.0)"), ("clip_rows_(model.embed.weight)  #", "pass  #"),
            ("optimizer.step()\n            clip_rows_(model.embed.weight)", "optimizer.step()")),
        "renorms the table on the CPU inside the forward": broken(("model = TagModel()", (
            "from course_utils.bank.lesson08.capstone_fallback import CpuRenormModel as TagModel\n"
            "    model = TagModel()"))),
    },
    equivalent={**EQUIVALENT, **loss_only("no fallback in the forward")},
    alternatives=ALTERNATIVES,
    **COMMON,
)
