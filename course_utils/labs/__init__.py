"""The lessons' experiments, built on the toolkit: the SAE of lesson 06's story, the data-path
paper's layout experiments (05), the haunted capstone script (08), and ``case_inputs``: every
object an exercise's case may hold, importable (and picklable) without the bank.
"""
