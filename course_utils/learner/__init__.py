"""What a learner uses: checks and hints (``checking``), quizzes, the lessons' widgets
(stride explorer, bug card, worked answers, code diffs), the workspace and its lessons,
the doctor, and the timed drill rounds (``drilling``). It may import every part below it
(core, toolkit, labs, drills, bank).
"""
