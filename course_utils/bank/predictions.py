"""The lessons' predict-then-run prompts, keyed by id ("05.view_of_T"): the question, the choices
and which one is right. The key lives here, not in the lesson, so no cell a learner reads holds
the answer; a lesson shows a prompt with ``predict("05.view_of_T")``."""

from __future__ import annotations

from dataclasses import dataclass

from course_utils.core.registry import Registry


@dataclass(frozen=True)
class Prediction:
    """One prompt: its id, the question, the choices and the index of the right choice."""

    key: str
    question: str
    choices: tuple[str, ...]
    answer: int

    def __post_init__(self):
        if not 0 <= self.answer < len(self.choices):
            raise ValueError(f"{self.key}: answer {self.answer} is not one of the "
                             f"{len(self.choices)} choices")


PREDICTIONS = (
    Prediction("03.naive_or_synced", "Of the two times below, which is larger, and by how much?",
               ("the naive time, a little", "the synchronized time, by far", "about the same"), 1),
    Prediction("05.view_of_T", "Can the transposed t.T be viewed as one flat row of 12?",
               ("yes: view(-1) gives 12 numbers", "no: view(-1) raises an error"), 1),
    Prediction("06.tune_lr", "Does any learning rate bring the affected run down to where the "
               "healthy one goes?", ("yes, a smaller one", "yes, a larger one", "no, none of them"), 2),
)

REGISTRY: Registry[Prediction] = Registry("prediction", lambda: ((p.key, p) for p in PREDICTIONS))


def get(key: str) -> Prediction:
    """The prompt ``key``; an unknown key raises naming close ones."""
    return REGISTRY.get(key)
