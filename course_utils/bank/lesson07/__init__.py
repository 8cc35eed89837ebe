"""Lesson 07's exercises, in the order the lesson teaches them: fix the classic training bugs of
the drill bank, graded by behaviour; and the lesson's quiz.

Each exercise links to a drill in ``course_utils.drills`` (its ``exercise`` field). Training
exercises return the model and are judged on what it learned: its parameters, and its loss on a
fresh batch, against the reference trained on the same batches. The mutants are the fixes
learners really write that hide the symptom but keep the bug.
"""

ORDER = ("zero_grad_loop", "accumulate", "logits_loss", "masked_token_mean", "predict",
         "masked_attention", "split_normalise", "clipped_step", "log_probs", "unit_rows")
