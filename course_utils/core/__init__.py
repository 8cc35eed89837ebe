"""The course's base layer: plain data and small utilities every other part may import.

Nothing here imports another part of ``course_utils`` (or torch, except ``compare``), so the
toolkit, the drills, the bank, the course machinery and the grader can all build on it.
"""
