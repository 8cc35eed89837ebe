"""Lesson 02's mastery quiz: batch bytes, a training budget, the MPS counters, OOM and retries,
attention's stored scores. Every question comes in two forms (a retry is served the other one)."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

_COUNTERS = ("torch.mps docs (R29 in references.md): current_allocated_memory is tensors only; "
             "driver_allocated_memory is every Metal allocation, caches included.")
_OOM = ("reduce the workload before touching allocator variables; a ratio of 0.0 removes the cap and "
        "risks a system-wide OOM (R32 in references.md).")
_RETRY = ("a context manager cannot re-run its with-block; a second yield makes contextlib raise, as "
          "the lesson shows by running it. A retry needs a loop around a function call.")
_SCORES = ("stored scores are (batch, tokens, tokens): halving the length quarters them, halving the "
           "batch only halves them (measured in the lesson). scaled_dot_product_attention does not "
           "avoid that on mps: in torch 2.13 its fused kernels (flash, memory-efficient) serve CUDA, and "
           "flash the CPU, while mps runs a math path that holds the whole matrix: "
           "`_scaled_dot_product_attention_math_for_mps` for calls without dropout or gradients, "
           "which returns the attention matrix with its output, and the generic math path for the "
           "rest, training included (R36, R89, R93 in references.md).")

QUIZ = Quiz("02", [
    (Question(
        "How many bytes does one float32 batch of shape (32, 128, 768) take?",
        ("3 MiB", "6 MiB", "12 MiB", "24 MiB"),
        2, "32 × 128 × 768 values × 4 bytes = 12,582,912 bytes = 12 MiB, computed in the lesson "
        "(the course's running example)."),
     Question(
        "How many bytes does one bfloat16 batch of shape (64, 256, 512) take?",
        ("8 MiB", "16 MiB", "32 MiB", "64 MiB"),
        1, "64 × 256 × 512 values × 2 bytes = 16,777,216 bytes = 16 MiB: values times the element "
        "size, as the lesson computes it.")),
    (Question(
        "Training a 7-billion-parameter model in fp32 with Adam: what do weights, gradients and "
        "Adam's two moments alone take?",
        ("56 GB", "84 GB", "112 GB", "140 GB"),
        2, "4 values per parameter × 4 bytes × 7e9 = 112 GB (about 104 GiB), before any activation "
        "(computed in the lesson)."),
     Question(
        "Training a 3-billion-parameter model in fp32 with Adam: what do weights, gradients and "
        "Adam's two moments alone take?",
        ("12 GB", "24 GB", "36 GB", "48 GB"),
        3, "4 values per parameter (weight, gradient, exp_avg, exp_avg_sq) × 4 bytes × 3e9 = 48 GB, "
        "before any activation (the lesson's budget, with other numbers).")),
    (Question(
        "On MPS, torch.mps.current_allocated_memory() and driver_allocated_memory() differ. Why?",
        ("They are one counter, reported in two different units",
         "current counts live tensors and driver all Metal memory",
         "driver counts only the memory held in the GPU cores' registers",
         "current also includes the CPU memory the Python process uses"),
        1, _COUNTERS),
     Question(
        "You delete a 2 GiB tensor on mps: current_allocated_memory() drops, "
        "driver_allocated_memory() does not. Why?",
        ("The tensor is still referenced by a graph, so it is not freed",
         "The driver counter only updates at the next synchronize",
         "The freed block stays in the allocator's cache for reuse",
         "Freed memory moves to the CPU's half of unified memory first"),
        2, _COUNTERS)),
    (Question(
        "Your MPS run hits 'MPS backend out of memory'. What do you try first?",
        ("Set PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to lift the cap",
         "Shrink the work with a smaller batch or shorter sequences",
         "Call torch.mps.empty_cache() at the end of every step",
         "Retry the same step in a loop until memory frees up"),
        1, _OOM),
     Question(
        "A colleague sets PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to get past an MPS out-of-memory "
        "error. What is the risk?",
        ("None: 0.0 makes the allocator free its cache more eagerly",
         "Every allocation then goes through the CPU's own allocator",
         "The error turns into a silent move of the model to the CPU",
         "No cap at all: the process can exhaust the system's memory"),
        3, _OOM)),
    (Question(
        "A circulating retry helper is a @contextmanager with a second `yield` in its except branch. "
        "What happens when the body runs out of memory?",
        ("The body runs again, with the allocator's cache emptied first",
         "RuntimeError: generator didn't stop after throw()",
         "The OOM is swallowed and the code after the with-block runs on",
         "It retries forever, as each new try runs out of memory again"),
        1, _RETRY),
     Question(
        "You want a helper that re-runs a training step with half the batch after an OOM. What shape "
        "must it have?",
        ("A @contextmanager that yields again from its except branch",
         "A with-block whose __exit__ empties the cache and returns True",
         "A decorator that catches the OOM and returns the last loss",
         "A loop around a function call that halves the batch on OOM"),
        3, _RETRY)),
    (Question(
        "In a model whose self-attention stores its full (batch, tokens, tokens) score matrix, as "
        "lesson 02's model does, which saves more activation memory?",
        ("Halving the batch, since every activation scales with it",
         "Halving the length, as the scores grow with its square",
         "Both save the same, since memory is linear in batch × length",
         "Neither: stored activations depend only on the model's width"),
        1, _SCORES),
     Question(
        "Lesson 02's model stores its attention scores. At the same batch, the sequence grows from "
        "256 to 512 tokens. The stored scores grow by:",
        ("1x (unchanged)", "2x", "4x", "8x"),
        2, _SCORES)),
])
