"""What an instructor uses around a workshop: the course on JupyterHub (``hub``), collecting
learners' notebooks (``collect``) and releasing their feedback (``feedback_release``).
Grading itself is ``course_utils.grader``. It may import the learner's part and below.
"""
