"""Lesson 07's mastery quiz: accumulated gradients, memory budgets, float16 overflow, DDP collectives,
attention masks, checkpointing. Every question comes in two forms (a retry is served the other one)."""

from course_utils.core.questions import Question, Quiz

_ACCUMULATE = ("each backward() adds one gradient to .grad: the sum of N nearly equal gradients is "
               "about N times one (R61 in references.md; computed in this lesson).")
_BUDGET = ("16 bytes per parameter: 4 for the weight, 4 for its gradient, 8 for exp_avg and exp_avg_sq, "
           "before activations (R9 in references.md; measured for a small model here).")
_FP16 = ("float16 overflows above 65504, and an inf gradient makes the step write NaN. A GradScaler "
         "exists for the opposite problem (small gradients underflowing), but it also skips steps whose "
         "gradients hold inf/NaN; it cannot rescue an activation that overflows in the forward pass "
         "(R68, R69, R71 in references.md; run here with real float16 arithmetic).")
_DDP = ("collectives match by call order; without timeout= the wait lasts the backend's default, 30 "
        "minutes for gloo and 10 for NCCL in torch 2.13 (R77 in references.md; run here with gloo).")
_MASK = ("padding already took its share of softmax's denominator, so zeroing it afterwards leaves "
         "weights that sum to less than 1; mask the scores with -inf before softmax (lesson 07's "
         "masked-attention exercise computes both).")
_CHECKPOINT = ("it keeps only block inputs and recomputes the rest in backward (R74 in references.md; "
               "forward calls counted in this lesson).")

QUIZ = Quiz("07", [
    (Question(
        "You run 50 steps on the same batch without optimizer.zero_grad() and a tiny learning "
        "rate. The gradient used at step 50 is about how many times one step's?",
        ("1x: backward() overwrites .grad", "about 7x, the square root of 50",
         "about 50x: each backward() adds", "about 2500x, as it grows squared"),
        2, _ACCUMULATE),
     Question(
        "You run 20 steps on the same batch without optimizer.zero_grad() and a tiny learning "
        "rate. The gradient used at step 20 is about how many times one step's?",
        ("1x", "about 4.5x", "about 20x", "about 400x"),
        2, _ACCUMULATE)),
    (Question(
        "A 7B-parameter model in float32 takes about 28 GB of weights. Weights, gradients and "
        "Adam's two moment buffers together take about:",
        ("56 GB", "84 GB", "112 GB", "140 GB"),
        2, _BUDGET + " Here 28 GB of weights plus 84 GB of gradients and Adam state."),
     Question(
        "A 1.5B-parameter model in float32 takes about 6 GB of weights. Weights, gradients and "
        "Adam's two moment buffers together take about:",
        ("12 GB", "18 GB", "24 GB", "30 GB"),
        2, _BUDGET + " Here 6 GB of weights plus 18 GB of gradients and Adam state.")),
    (Question(
        "fp16 training without a GradScaler is fine for 500 steps, then every loss is NaN. Which "
        "mechanism fits best?",
        ("float16 rounds the learning rate down to zero after a while",
         "A gradient passes 65504, turns inf, and the step writes NaN",
         "The data loader runs out of batches and repeats a bad one",
         "autocast switches itself off after a fixed number of steps"),
        1, _FP16),
     Question(
        "In float16, a gradient value of 70,000 is stored as:",
        ("65504, clamped to the largest float16 value",
         "70,000, rounded to the nearest multiple of 32",
         "0, flushed because it is out of range",
         "inf, since float16 tops out at 65504"),
        3, _FP16)),
    (Question(
        "In DDP, rank 0 skips a batch with continue while the other ranks go on. What happens?",
        ("The batch is skipped on every rank by DDP automatically",
         "The other ranks wait in an all-reduce until a timeout",
         "Rank 0 raises an error at once and the whole job stops",
         "Each rank averages only its own gradients from then on"),
        1, _DDP),
     Question(
        "In DDP over NCCL with no timeout= given, one rank skips a batch. In torch 2.13, how long do "
        "the others wait in their all-reduce by default?",
        ("30 seconds", "10 minutes", "30 minutes", "until killed"),
        1, _DDP)),
    (Question(
        "A custom attention zeroes the padding weights after softmax. Why is the output still "
        "wrong?",
        ("It is not wrong: a zero weight means no influence at all",
         "The padding already entered softmax's denominator",
         "Multiplying by a mask detaches the weights from autograd",
         "softmax over the keys is the wrong axis for attention"),
        1, _MASK),
     Question(
        "Scores over 4 keys are [2, 1, 0, 3]; the last key is padding. Zeroing its weight after "
        "softmax leaves the other three weights summing to about:",
        ("0.36", "0.5", "0.64", "1.0"),
        0, _MASK + " Here e^3 / (e^2 + e + 1 + e^3) = 0.64 goes to the padding, so 0.36 remains.")),
    (Question(
        "Gradient checkpointing cuts the activation memory of a deep model. What does it cost?",
        ("Nothing: the recomputed values are cached for free",
         "Extra compute: blocks run their forward again in backward",
         "Lower accuracy, since recomputed activations are rounded",
         "It only works with float16 weights and activations"),
        1, _CHECKPOINT),
     Question(
        "With gradient checkpointing on every block, how often does a block's forward run per "
        "training step?",
        ("Once: backward reuses what the forward stored",
         "Twice: once more in backward, from its input",
         "Three times: forward, backward, optimizer step",
         "Never again: only the gradients are recomputed"),
        1, _CHECKPOINT)),
])
