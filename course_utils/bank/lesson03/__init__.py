"""Lesson 03's exercises, in the order the lesson teaches them: an honest timer, the sync points of
a loop, and logging every N steps with the same values; and the lesson's quiz. The lesson's
workloads are in ``course_utils.labs.sync_lab``, the objects its cases hold in
``course_utils.labs.case_inputs``."""

ORDER = ("honest_timer", "sync_lines", "log_every_n")
