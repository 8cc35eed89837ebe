"""Lesson 00's mastery quiz: check(), where to work, what emulated means, random cases.

Every question comes in two forms (the same idea, other details): a retry after the feedback,
which shows the answers, is served the other form."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

_FAILS = "a check raises so nothing can hide a failure; it names the case, expected and got (lesson 00)."
_WHERE = "exercises/ is regenerated from solutions/; workspace/ copies are never overwritten (lesson 00)."
_EMULATED = ("emulations act where the real effect acts (the dispatcher, on CPU tensors) and are "
             "labelled; nothing is pasted (lesson 00).")
_RANDOM = "fixed cases cover chosen edges; seeded random cases stop answers tuned to a list (lesson 00)."

QUIZ = Quiz("00", [
    (Question(
        "Your answer to an exercise is wrong. What does check() do?",
        ("Prints 'Failed' under the cell and carries on",
         "Raises CheckFailed naming the case, the expected value and yours",
         "Records a fail in progress quietly and returns False to the cell",
         "Compares your source code with the solution's code line by line"),
        1, _FAILS),
     Question(
        "Your batch_bytes answer is one byte off on a single case. What does check() show?",
        ("A warning under the cell, after which the next cell still runs as usual",
         "A score of 90% in progress, with no error raised in the cell",
         "CheckFailed, which names that case, the bytes expected and yours",
         "A pass: one wrong case in ten is inside the check's tolerance"),
        2, _FAILS)),
    (Question(
        "Where should you write your answers to lesson 01's exercises?",
        ("In exercises/01_mps_setup.ipynb, the notebook the course ships",
         "In solutions/01_mps_setup.ipynb, next to the stored outputs",
         "In your own copy in workspace/, made by `course start 01`",
         "In a new notebook anywhere, importing the exercises by hand"),
        2, _WHERE),
     Question(
        "You typed your lesson 03 answers into exercises/03_sync_and_timing.ipynb. What is the risk?",
        ("None: the course merges your edits whenever it rebuilds the folder",
         "None: progress.json keeps a copy of every answer that passed",
         "They are lost when exercises/ is regenerated from solutions/",
         "Your checks fail: check() only accepts code from solutions/"),
        2, _WHERE)),
    (Question(
        "On a Linux laptop without a GPU, lesson 06 says 'emulated'. What does that mean?",
        ("The lesson is skipped there and its exercises are marked as passed",
         "The MPS bug is reproduced on CPU tensors and hits unmodified Adam",
         "The results were measured on a Mac beforehand and pasted in",
         "A slow software copy of Metal runs the lesson's GPU kernels"),
        1, _EMULATED),
     Question(
        "Lesson 04 shows fallback warnings marked 'emulated' on a Linux box. Where do they come from?",
        ("The real MPS backend, running in a compatibility mode on Linux",
         "A recording of a Mac's warnings, replayed in the order they were measured",
         "An emulation declaring chosen ops unsupported at the dispatcher",
         "Nowhere: the label marks output that was typed in by hand"),
        2, _EMULATED)),
    (Question(
        "check() passed. How could it have drawn inputs you never saw?",
        ("It did not: only the fixed cases listed in the exercise ever run",
         "It drew random cases from a fresh seed, next to the fixed ones",
         "It read your notebook's variables and tested the values it found",
         "It reused the cases that other learners' answers failed on"),
        1, _RANDOM),
     Question(
        "The same answer passes check() twice, then fails a third check. What is the likely reason?",
        ("check() is flaky: rerun it until it passes and then move on",
         "The fixed cases were edited between the runs by an update",
         "This run's random cases hit an edge your code misses",
         "progress.json limits how many times one answer may pass"),
        2, _RANDOM)),
])
