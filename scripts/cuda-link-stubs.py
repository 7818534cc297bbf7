"""Link-time stand-ins for the CUDA libraries a build with cudarc's `dynamic-linking` links
(candle-core chooses it): libcuda, libnvrtc, libcublas, libcublasLt, libcurand and libnccl, each a shared
library with the real one's soname that defines every function cudarc's bindings declare, so a
program links on a machine without CUDA. At run time the real libraries load by soname: never
ship these. Usage: python3 cuda-link-stubs.py CUDARC_SRC OUT_DIR
"""

import os
import re
import subprocess
import sys

# cudarc module -> (library name, soname of CUDA 13's library)
LIBRARIES = {
    "driver": ("cuda", "libcuda.so.1"),
    "nvrtc": ("nvrtc", "libnvrtc.so.13"),
    "cublas": ("cublas", "libcublas.so.13"),
    "cublaslt": ("cublasLt", "libcublasLt.so.13"),
    "curand": ("curand", "libcurand.so.10"),
    "nccl": ("nccl", "libnccl.so.2"),
}


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    for module, (name, soname) in LIBRARIES.items():
        with open(os.path.join(src, "src", module, "sys", "mod.rs")) as f:
            text = f.read()
        names = sorted(set(re.findall(r"^\s*(?:pub )?fn (\w+)\(", text, re.M)))
        names = [n for n in names if n not in ("culib", "is_culib_present")]
        c = os.path.join(out, f"{name}.c")
        with open(c, "w") as f:
            f.writelines(f"void {n}(void) {{}}\n" for n in names)
        lib = os.path.join(out, f"lib{name}.so")
        subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", lib, c], check=True)
        print(f"{lib}: {len(names)} functions, soname {soname}")


if __name__ == "__main__":
    main()
