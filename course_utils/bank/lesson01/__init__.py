"""Lesson 01's exercises, in the order the lesson teaches them: the device state machine, the
same-device guard, a batch's bytes and reading a diagnose report; and the lesson's quiz."""

ORDER = ("choose_device", "same_device", "batch_bytes", "read_report")
