#!/usr/bin/env bash
# Installs NVIDIA's `nvidia-cuda-nvcc` wheel (pinned in scripts/requirements-ptx.txt, or the
# file $DLMD_CUDA_WHEELS names) into .venv-ptx (or $DLMD_PTX_VENV) and prints the directory
# holding its nvcc and ptxas: a CUDA compiler for machines without a CUDA toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${DLMD_PTX_VENV:-.venv-ptx}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q -r "${DLMD_CUDA_WHEELS:-scripts/requirements-ptx.txt}"
"$venv/bin/python" -c 'import nvidia, os
for base in nvidia.__path__:
    for sub in ("cu13", "cuda_nvcc"):
        p = os.path.join(base, sub, "bin")
        if os.path.exists(os.path.join(p, "ptxas")): print(os.path.abspath(p)); raise SystemExit
raise SystemExit("the nvidia-cuda-nvcc wheel holds no ptxas")'
