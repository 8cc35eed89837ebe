"""Lesson 01's mastery quiz: the MPS states, the float64 red herring, placement, the fallback variable."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("01", [
    Question(
        "torch.backends.mps.is_built() is True but is_available() is False. Which state is this?",
        ("not built", "built but unavailable", "available", "fallback"),
        1, "is_built asks whether this wheel knows MPS; is_available whether this machine can use "
        "it now (R19, R23 in references.md)."),
    Question(
        "Why did switching to float64 seem to 'fix' the frozen encoder in the addcmul_ story?",
        ("float64 has more precision for Adam", "MPS has no float64, so the run moved to CPU, "
         "where the bug does not exist", "float64 tensors are always contiguous",
         "Adam uses a different kernel for float64"),
        1, "a red herring: float32 on CPU also trained; the device mattered (R1 in references.md)."),
    Question(
        "A model is on mps and the batch is on cpu. What happens in the forward pass?",
        ("PyTorch moves the batch for you", "An error about tensors on different devices",
         "It silently runs on CPU", "Unified memory makes it work"),
        1, "placement is explicit even with unified memory; move model and batch together "
        "(lesson 01)."),
    Question(
        "You set os.environ['PYTORCH_ENABLE_MPS_FALLBACK'] = '1' in a cell after import torch. "
        "What now?",
        ("Fallback is on from the next op", "Nothing changes until you restart the kernel and "
         "set it before import torch", "Only new tensors fall back", "torch re-reads it on "
         "every op"),
        1, "the variable is read once when the MPS library registers (R48 in references.md)."),
    Question(
        "A CI runner on macOS reports mps available but every allocation fails. Why?",
        ("A PyTorch bug in is_available", "Hosted macOS arm64 runners do not support MPS although "
         "is_available() says True", "The runner has too little RAM", "MPS needs float64"),
        1, "GitHub's docs say MPS is unsupported on those runners (R25, R26 in references.md); "
        "pick_device probes "
        "an allocation for that reason."),
])
