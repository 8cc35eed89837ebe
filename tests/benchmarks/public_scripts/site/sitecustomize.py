"""Lets torchvision's CUDA wheel (the one PyPI serves) import beside a CPU-only torch: its compiled
ops cannot load there, and ``torchvision._meta_registrations`` then registers a fake kernel for
``torchvision::nms`` (and ``qnms``), ops that no longer exists. This defines their schemas first (the public
scripts use no torchvision op). Python imports this module at start-up when its folder is on
``PYTHONPATH``; the benchmark puts it there for plain and watched runs alike.
"""

import sys

_OPS = {
    "nms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}


class _DefineNms:
    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torchvision._meta_registrations":
            import torch

            for name, schema in _OPS.items():
                try:
                    torch.library.define(f"torchvision::{name}", schema)
                except RuntimeError:  # the compiled ops loaded: nothing to stand in for
                    pass
        return None


sys.meta_path.insert(0, _DefineNms())
