"""Lesson 02's mastery quiz: batch bytes, a training budget, the MPS counters, OOM and retries."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("02", [
    Question(
        "How many bytes does one float32 batch of shape (32, 128, 768) take?",
        ("3 MiB", "12 MiB", "96 MiB", "768 KiB"),
        1, "32 × 128 × 768 values × 4 bytes = 12,582,912 bytes = 12 MiB, computed in the lesson "
        "(the course's running example)."),
    Question(
        "Training a 7-billion-parameter model in fp32 with Adam: what do weights, gradients and "
        "Adam's two moments alone take?",
        ("28 GB", "56 GB", "112 GB", "84 GB"),
        2, "4 values per parameter × 4 bytes × 7e9 = 112 GB (about 104 GiB), before any activation "
        "(computed in the lesson)."),
    Question(
        "On MPS, torch.mps.current_allocated_memory() and driver_allocated_memory() differ. Why?",
        ("They are the same counter in different units", "current counts live tensors; driver "
         "counts all Metal memory of the process, including the allocator's cache",
         "driver counts only the GPU cores' registers", "current includes the CPU's memory"),
        1, "torch.mps docs (R29 in references.md): current_allocated_memory is tensors only; "
        "driver_allocated_memory is every Metal allocation, caches included."),
    Question(
        "Your MPS run hits 'MPS backend out of memory'. What do you try first?",
        ("Set PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0", "Shrink the work: a smaller batch or shorter "
         "sequences", "Switch to float64", "Call torch.mps.empty_cache() in every step"),
        1, "reduce the workload before touching allocator variables; a ratio of 0.0 removes the "
        "cap and risks a system-wide OOM (R32 in references.md)."),
    Question(
        "A circulating retry helper is a @contextmanager with a second `yield` in its except branch. "
        "What happens when the body runs out of memory?",
        ("The body runs again with the cache emptied", "contextlib raises RuntimeError: "
         "generator didn't stop after throw()", "The OOM is silently ignored",
         "It retries forever"),
        1, "a context manager cannot re-run its with-block; the second yield makes contextlib "
        "raise, as the lesson shows by running it. A retry needs a loop around a function call."),
    Question(
        "In a model whose self-attention stores its full (batch, tokens, tokens) score matrix, as "
        "lesson 02's model does, which saves more activation memory?",
        ("Halving the batch", "Halving the sequence length", "Both save exactly the same",
         "Neither changes activations"),
        1, "stored scores are (batch, tokens, tokens): halving the length quarters them, halving the "
        "batch only halves them (measured in the lesson). Fused attention kernels "
        "(scaled_dot_product_attention) never store the scores; then both save about the same "
        "(R36 in references.md)."),
])
