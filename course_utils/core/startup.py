"""Facts that must be read before torch is imported (stdlib only; imported first by the package).

``PYTORCH_ENABLE_MPS_FALLBACK`` is read once, when torch's MPS library registers (R48 in references.md). If
course_utils is imported before torch, the value seen here is the value torch will read.
"""

import os
import sys

TORCH_IMPORTED_FIRST = "torch" in sys.modules
FALLBACK_AT_IMPORT = os.environ.get("PYTORCH_ENABLE_MPS_FALLBACK")
