"""Lesson 08's exercises, in the order the lesson teaches them: the capstone's four checkpoints,
each graded by behaviour on the lab's emulated affected Mac; and the lesson's quiz.

The learner writes one function, ``train(lab)``: the haunted script of ``course_utils.labs.capstone``
with its bugs fixed, returning ``run.report()``. Each checkpoint runs it in fresh labs and judges
the report (held-out loss, frozen parameters, fallbacks in the forward, syncs per step). The
mutants are the haunted script itself and the partial repairs learners really write, each the
fixed script with one bug put back (or fixed the wrong way); tests/test_bank.py proves every one
of them fails its checkpoint.
"""

ORDER = ("capstone_loss", "capstone_frozen", "capstone_fallback", "capstone_syncs")
