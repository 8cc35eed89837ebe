"""Lesson 03's mastery quiz: asynchronous timing, sync points, benchmark's timer, robust summaries,
logging, data-dependent shapes. Every question comes in two forms (a retry is served the other one)."""

from __future__ import annotations

from course_utils.core.questions import Question, Quiz

_ASYNC = ("it stops when the call returns, after the launch; the device is still working (lesson 03's "
          "illustration; R39 in references.md).")
_SYNC = ("a Python bool or number must come to the host, so the host waits for the device: a sync "
         "every step (reading values on the host syncs: R39, R40 in references.md).")
_TIMER = ("accelerator-agnostic since PR #157131; the older timer.py synchronized CUDA, XPU and "
          "PrivateUse1 devices, and only mps was missing (R42, R43 in references.md).")
_MEDIAN = ("a single outlier moves the mean but not the median; Timer reports medians and "
           "interquartile ranges for that reason (torch.utils.benchmark docs, R41 in references.md).")
_GROUPS = ("each .item(), float() or print is one sync; stacking N losses and reading them at once is "
           "one sync per N steps (lesson 03 counts them).")
_MASK = ("a boolean mask must be counted (nonzero) before the output can be allocated; masked_fill_ "
         "or torch.where keep the shape and avoid it (lesson 03; our inference from R39 in "
         "references.md).")

QUIZ = Quiz("03", [
    (Question(
        "A forward pass queues about 35 ms of mps work and Python finishes launching it in about "
        "3 ms. What does a stopwatch around the call, without a synchronize, report?",
        ("about 3 ms", "about 32 ms", "about 35 ms", "about 38 ms"),
        0, _ASYNC),
     Question(
        "A training step queues about 50 ms of mps work and Python returns from it after about 4 ms. "
        "A stopwatch around the step, without a synchronize, reports:",
        ("about 54 ms", "about 50 ms", "about 46 ms", "about 4 ms"),
        3, _ASYNC)),
    (Question(
        "Which line makes the host wait for the device in a training loop on mps or cuda?",
        ("loss = loss_fn(model(x), y)", "losses.append(loss.detach())",
         "if torch.isnan(loss): break", "x = x.view(x.size(0), -1)"),
        2, _SYNC),
     Question(
        "Which line makes the host wait for the device in a training loop on mps or cuda?",
        ("optimizer.step()", "loss.backward()", "total += loss.item()", "logits = model(x)"),
        2, _SYNC)),
    (Question(
        "Why does torch.utils.benchmark.Timer give honest numbers on mps in torch 2.13?",
        ("It runs the timed statement on the CPU, where nothing is queued",
         "Its clock calls torch.accelerator.synchronize() before each read",
         "It stamps each run with events that the mps device records",
         "It only times the launch, which is what a benchmark should do"),
        1, _TIMER),
     Question(
        "Before PR #157131, torch.utils.benchmark.Timer under-reported mps run times. Why?",
        ("It synchronized CUDA only; every other device went unsynced",
         "It ran each statement once, so the warm-up run was timed too",
         "It synchronized CUDA, XPU and PrivateUse1, but not mps",
         "It reported the mean, which one fast run pulls down"),
        2, _TIMER)),
    (Question(
        "You time 10 calls after a warm-up; one call hits a 200 ms pause. Which summary is robust?",
        ("the mean", "the median", "the maximum", "the sum"),
        1, _MEDIAN),
     Question(
        "Timer reports a median of 2.1 ms over 20 runs; your own mean of the same runs is 9.8 ms. "
        "What does that suggest?",
        ("Most runs took 9.8 ms and the median hides the true cost",
         "The device was not synchronized, so both figures are wrong",
         "A few runs were far slower, e.g. a pause, and pulled the mean",
         "The warm-up run was included, and it doubles any mean"),
        2, _MEDIAN)),
    (Question(
        "You log the loss every step with loss.item(). What keeps the same numbers with fewer syncs?",
        ("loss.cpu().item() every step, so the read happens on the CPU",
         "float(loss) every step, which skips the .item() call",
         "Keep loss.detach() in a list; read it stacked every N steps",
         "print(loss) every step, which formats the value lazily"),
        2, _GROUPS),
     Question(
        "A loop runs 1,000 steps. You keep each loss.detach() and read them stacked in groups of 25 "
        "instead of calling loss.item() every step. How many syncs does logging cost now?",
        ("1", "25", "40", "1,000"),
        2, _GROUPS)),
    (Question(
        "On an accelerator, which indexing forces a sync because the result's size depends on "
        "the values?",
        ("x[:, 0]", "x[idx] with an integer index tensor", "x[mask] with a boolean mask",
         "x.view(-1)"),
        2, _MASK),
     Question(
        "`x[mask] = 0` syncs every step on mps. Which line does the same work with no sync?",
        ("x.masked_fill_(mask, 0)", "x[mask.nonzero(as_tuple=True)] = 0", "x = x[~mask]",
         "x[mask.nonzero()] = 0"),
        0, _MASK)),
])
