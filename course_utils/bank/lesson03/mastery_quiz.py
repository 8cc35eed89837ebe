"""Lesson 03's mastery quiz: asynchronous timing, sync points, benchmark's timer, logging."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

QUIZ = Quiz("03", [
    Question(
        "A forward pass queues about 35 ms of mps work and Python finishes launching it in about "
        "3 ms. What does a stopwatch around the call, without a synchronize, report?",
        ("about 35 ms", "about 3 ms", "about 38 ms", "0 ms: nothing ran"),
        1, "it stops when the call returns, after the launch; the device is still working "
        "(lesson 03's illustration; R39 in references.md)."),
    Question(
        "Which line makes the host wait for the device in a training loop on mps or cuda?",
        ("loss = loss_fn(model(x), y)", "losses.append(loss.detach())", "if torch.isnan(loss): break",
         "x = x.view(x.size(0), -1)"),
        2, "`if` needs a Python bool, so the value must come to the host: a sync every step "
        "(reading values on the host syncs: R39, R40 in references.md)."),
    Question(
        "Why does torch.utils.benchmark.Timer give honest numbers on mps in torch 2.13?",
        ("it runs the statement on the CPU", "its default timer calls torch.accelerator.synchronize()"
         " when an accelerator is available", "it uses CUDA events", "it only times the launch"),
        1, "accelerator-agnostic since PR #157131; before it only CUDA was synchronized (R42, R43 in "
        "references.md)."),
    Question(
        "You time 10 calls after a warm-up; one call hits a 200 ms pause. Which summary is robust?",
        ("the mean", "the median", "the maximum", "the sum"),
        1, "a single outlier moves the mean but not the median; Timer reports medians and "
        "interquartile ranges for that reason (torch.utils.benchmark docs, R41 in references.md)."),
    Question(
        "You log the loss every step with loss.item(). What keeps the same numbers with fewer syncs?",
        ("loss.cpu().item() every step", "float(loss) every step",
         "keep loss.detach() in a list and read torch.stack(list).tolist() every N steps",
         "print(loss) every step"),
        2, "each .item(), float() or print is one sync; stacking N losses and reading them at once "
        "is one sync per N steps (lesson 03 counts them)."),
    Question(
        "On an accelerator, which indexing forces a sync because the result's size depends on "
        "the values?",
        ("x[:, 0]", "x[idx] with an integer index tensor", "x[mask] with a boolean mask",
         "x.view(-1)"),
        2, "a boolean mask must be counted (nonzero) before the output can be allocated; "
        "masked_fill_ or torch.where keep the shape and avoid it (lesson 03; our inference from "
        "R39 in references.md)."),
])
