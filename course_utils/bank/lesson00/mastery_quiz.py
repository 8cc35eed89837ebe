"""Lesson 00's mastery quiz: check(), where to work, what emulated means, random cases."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("00", [
    Question(
        "Your answer to an exercise is wrong. What does check() do?",
        ("Prints 'Failed' and carries on", "Raises CheckFailed with the case, expected and got",
         "Silently records a fail in progress", "Compares your source code with the solution"),
        1, "a check raises so nothing can hide a failure; it names the case, expected and got."),
    Question(
        "Where should you write your answers to lesson 01's exercises?",
        ("In exercises/01_mps_setup.ipynb directly", "In solutions/01_mps_setup.ipynb",
         "In the copy `course start 01` puts in workspace/", "In a new notebook anywhere"),
        2, "exercises/ is regenerated from solutions/; workspace/ copies are never overwritten."),
    Question(
        "On a Linux laptop without a GPU, lesson 06 says 'emulated'. What does that mean?",
        ("The lesson is skipped", "The MPS bug is reproduced on CPU at the dispatcher level, so "
         "unmodified code like torch.optim.Adam is affected", "The results were measured on a Mac "
         "and pasted in", "A slow software copy of Metal runs"),
        1, "emulations act where the real effect acts and are labelled; nothing is pasted."),
    Question(
        "check() passed. How could it have drawn inputs you never saw?",
        ("It did not: only the fixed cases run", "Random cases are drawn from a fresh seed each "
         "time, next to the fixed cases", "It reads your notebook's variables",
         "It uses the cases of the last learner"),
        1, "fixed cases cover chosen edges; seeded random cases stop answers tuned to a list."),
])
