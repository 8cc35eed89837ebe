"""The course inside Jupyter: its server settings and page CSS (``lab_config/``: ``course`` on
PATH in kernels and terminals, the CSS that printed reports need), the JupyterHub launcher
that prepares a learner's folder and the hub's configuration files (``hub``). Standard
library only, so a learner's server starts without importing torch.
"""
