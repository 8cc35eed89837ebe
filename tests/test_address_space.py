"""Does a graded process get room for the GPU libraries a CUDA torch maps, so that ``import torch``
works under the default address-space limit on a CUDA build as on a CPU build?"""

from __future__ import annotations

import subprocess
import sys

import pytest

from course_utils.grader.address_space import gpu_library_bytes, mapped_bytes
from course_utils.grader.sandbox import Limits

SITE = "/venv/lib/python3.11/site-packages"
MAPS = "\n".join([
    f"7f0000000000-7f0010000000 r-xp 00000000 fd:01 11 {SITE}/torch/lib/libtorch_cpu.so",
    f"7f0010000000-7f0018000000 r-xp 00000000 fd:01 12 {SITE}/torch/lib/libtorch_cuda.so",
    f"7f0018000000-7f0019000000 r--p 00000000 fd:01 13 {SITE}/torch/lib/libc10_cuda.so",
    f"7f0020000000-7f0040000000 r-xp 00000000 fd:01 14 {SITE}/nvidia/cu13/lib/libcublasLt.so.13",
    f"7f0040000000-7f0041000000 r-xp 00000000 fd:01 15 {SITE}/nvidia/cudnn/lib/libcudnn.so.9",
    "7f0050000000-7f0060000000 rw-p 00000000 00:00 0 ",
    "7f0060000000-7f0061000000 rw-p 00000000 00:00 0 [heap]",
    f"7f0070000000-7f0071000000 r-xp 00000000 fd:01 16 {SITE}/numpy/_core/_multiarray_umath.so",
    "7f0080000000-7f0081000000 r-xp 00000000 fd:01 17 /home/me/cuda_notes/libmine.so",
])


def test_only_the_gpu_libraries_of_torch_and_the_nvidia_packages_are_counted():
    assert mapped_bytes(MAPS) == 0x8000000 + 0x1000000 + 0x20000000 + 0x1000000
    assert mapped_bytes("") == 0 and mapped_bytes("garbage line\n") == 0


@pytest.mark.slow
def test_torch_imports_under_the_default_limit_of_a_graded_process():
    """The limit a submission gets by default (``--memory`` 2048 plus the room) lets this
    environment's torch import: on torch 2.14.1+cu130 without the room it fails to map libtorch."""
    limit = Limits().memory_mb * 2**20 + gpu_library_bytes()
    code = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]),) * 2)\n"
            "import torch\nx = torch.ones(1000, 1000)\nprint(float(x.sum()))")
    done = subprocess.run([sys.executable, "-c", code, str(limit)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "1000000.0", done.stderr[-1500:]
