"""Lesson 06's exercises, in the order the lesson teaches them: a frozen-parameter detector, the
minimal repro, hunting a planted bug with a differential test, repairing an inherited run,
predicting the difftest; and the lesson's quiz. The objects learners use (the SAE, ``Trainer``,
``inherited_run``, ``Machine``) live outside the bank, in ``course_utils.labs.sae`` and
``course_utils.toolkit.emulate.inplace``, so graded code can import them."""

ORDER = ("find_frozen", "minimal_repro", "hunt", "repair", "predict_flag")
