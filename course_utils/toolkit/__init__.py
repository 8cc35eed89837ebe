"""The debugging toolkit a learner takes home: it works on any PyTorch code, course or not.

``device`` (choose and diagnose the device), ``memory`` (budgets and allocator counters),
``timing`` (honest timing), ``syncs`` (hidden host syncs), ``optrace`` (which ops leave the
device), ``layout`` (shape, stride, offset), ``difftest`` (differential tests across devices and
layouts), ``sentinel`` (a training watchdog), ``watch`` (``course watch``) and ``emulate`` (the
Mac-only effects, reproduced on the CPU at the layer where they happen). The toolkit imports
``course_utils.core`` at most, never the course machinery, the bank, the drills or the grader.
"""
