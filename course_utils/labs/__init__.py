"""The lessons' experiments, built on the toolkit: lesson 03's workloads (``sync_lab``), the data-path
paper's layout experiments (05), the SAE of lesson 06's story, the haunted capstone script (08), and
``case_inputs``: every object an exercise's case may hold, importable (and picklable) without the bank.
"""
