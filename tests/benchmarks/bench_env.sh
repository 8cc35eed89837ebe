#!/usr/bin/env bash
# The peers' environment for tests/benchmarks/bench_watch.py: build/bench-venv with torch pinned to
# 2.13.0 (the course's constraints file: nothing may pull a CUDA torch), the course itself, and the
# tools course watch is compared with, each installed as its documentation says:
#   torcheck 1.0.1 declares torch<2.0, so it goes in with --no-deps (it imports only torch);
#   cockpit-for-pytorch 1.0.2 imports pkg_resources, which setuptools 81 removed: setuptools<81.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=build/bench-venv
python3 -m venv "$venv"
pip="$venv/bin/python -m pip install --quiet -c course_utils/constraints.txt"
$pip "setuptools<81" torch==2.13.0
$pip -e .
$pip --no-deps torcheck==1.0.1
$pip cockpit-for-pytorch==1.0.2 backpack-for-pytorch
"$venv/bin/python" -c "import torch, torcheck, cockpit, backpack; print('bench-venv: torch', torch.__version__)"
