"""Lesson 02's exercises, in the order the lesson teaches them: optimizer-state bytes, bytes saved
for backward, an out-of-memory retry tested against simulated OOMs, and the largest batch under a
memory budget; and the lesson's quiz."""

ORDER = ("state_bytes", "saved_bytes", "retry_halving", "largest_batch")
