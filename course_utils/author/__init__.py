"""What an author uses: generating exercises from solutions (``authoring``), running notebooks
and storing their outputs (``execute``, ``nbval_kernels``), automatic mutants (``mutation``)
and the fast loop (``author_loop``). It may import the learner's part and those below it.
"""
