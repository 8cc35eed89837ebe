"""Facts that must be read before torch is imported (stdlib only; imported first by the package).

``PYTORCH_ENABLE_MPS_FALLBACK`` is read once, when torch's MPS library registers (R48 in references.md). If
course_utils is imported before torch, the value seen here is the value torch will read.

Also set here: importing ``torch.utils.benchmark`` (lessons 03 and 04) loads
``torch.utils.cpp_extension``, which in a CUDA build of torch (PyPI's Linux wheel) on a machine
with a CUDA toolkit and no usable GPU logs "No CUDA runtime is found, using CUDA_HOME=...": a note
about building C++ extensions, which the course never does, that a learner reads as a fault of the
lesson. That one note is dropped; the logger's
other messages pass.
"""

import logging
import os
import sys

TORCH_IMPORTED_FIRST = "torch" in sys.modules
FALLBACK_AT_IMPORT = os.environ.get("PYTORCH_ENABLE_MPS_FALLBACK")


class _NoExtensionBuilderNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("No CUDA runtime is found")


logging.getLogger("torch.utils.cpp_extension").addFilter(_NoExtensionBuilderNote())
