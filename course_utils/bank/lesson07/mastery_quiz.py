"""Lesson 07's mastery quiz."""

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("07", [
    Question(
        "You run 50 steps on the same batch without optimizer.zero_grad() and a tiny learning "
        "rate. The gradient used at step 50 is about how many times one step's?",
        ("1x", "about 7x (the square root of 50)", "50x", "2500x"),
        2, "each backward() adds one gradient to .grad: the sum of 50 nearly equal gradients is "
        "about 50 times one (R61 in references.md; computed in this lesson)."),
    Question(
        "A 7B-parameter model in float32 takes about 28 GB of weights. Weights, gradients and "
        "Adam's two moment buffers together take about:",
        ("28 GB", "56 GB", "84 GB", "112 GB"),
        3, "16 bytes per parameter: 4 for the weight, 4 for its gradient, 8 for exp_avg and "
        "exp_avg_sq, before activations: 28 GB of weights plus 84 GB of gradients and Adam state "
        "(R9 in references.md; measured for a small model here)."),
    Question(
        "fp16 training without a GradScaler is fine for 500 steps, then every loss is NaN. Which "
        "mechanism fits best?",
        ("float16 rounds the learning rate down to zero after a while",
         "A gradient passes 65504, becomes inf, and the step writes NaN",
         "The data loader runs out of batches and repeats a bad one",
         "autocast switches itself off after a fixed number of steps"),
        1, "float16 overflows above 65504, and an inf gradient makes the step write NaN. A GradScaler "
        "exists for the opposite problem (small gradients underflowing), but it also skips steps "
        "whose gradients hold inf/NaN; it cannot rescue an activation that overflows in the forward "
        "pass (R68, R69, R71 in references.md; run here with real float16 arithmetic)."),
    Question(
        "In DDP, rank 0 skips a batch with continue while the other ranks go on. What happens?",
        ("The batch is skipped on every rank automatically",
         "The others wait in an all-reduce until the timeout",
         "Rank 0 raises an error at once and the job stops",
         "Each rank averages only its own gradients from then on"),
        1, "collectives match by call order; without timeout= the wait lasts the backend's default, "
        "30 minutes for gloo and 10 for NCCL in torch 2.13 (R77 in references.md; run here with "
        "gloo)."),
    Question(
        "A custom attention zeroes the padding weights after softmax. Why is the output still "
        "wrong?",
        ("It is not wrong: a zero weight means no influence",
         "Padding already entered softmax's denominator",
         "Multiplying by a mask detaches the weights from autograd",
         "softmax over the keys is the wrong dimension for attention"),
        1, "mask the scores with -inf before softmax (R36 in references.md)."),
    Question(
        "Gradient checkpointing cuts the activation memory of a deep model. What does it cost?",
        ("Nothing: the recomputed values are cached for free",
         "Extra compute: blocks run their forward again in backward",
         "Lower accuracy, since recomputed activations are rounded",
         "It only works with float16 weights and activations"),
        1, "it keeps only block inputs and recomputes the rest in backward (R74 in references.md; "
        "forward calls counted in this lesson)."),
])
