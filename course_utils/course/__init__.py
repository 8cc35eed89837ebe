"""The course machinery: ``check``/``hint`` (``checking``), progress views, quizzes, widgets
(stride explorer, bug card, drill mode), the learner's workspace and ``course check``, running
notebooks (``execute``, ``nbval_kernels``), authoring exercises from solutions, the doctor and
the terminal drills. It may import every part below it (core, toolkit, labs, drills, bank).
"""
