"""Splits fuzz inputs into their cases and packs cases into inputs (fuzz/src/lib.rs, `cases`).

An input is `[length: u16, little-endian][length bytes]`, repeated; a length past the end takes
what is left, and an input too short for a length is one case. Packing lets a few seed files
hold a corpus whose coverage spans thousands of monomorphised paths.

    python3 scripts/fuzz_cases.py unpack DEST SRC...     every case of every file in SRC, one per file
    python3 scripts/fuzz_cases.py wrap DEST SRC...       each file of SRC, a bare case (an input from
                                                          before cases), as an input of one case
    python3 scripts/fuzz_cases.py pack DEST SRC [BYTES]  the files of SRC (one case each) into inputs
                                                          of at most BYTES (default 4096)
"""

import hashlib
import os
import struct
import sys


def cases(data):
    if len(data) < 2:
        return [data] if data else []
    out = []
    while len(data) >= 2:
        (n,) = struct.unpack_from("<H", data)
        out.append(data[2 : 2 + n])
        data = data[2 + n :]
    return out


def frame(case):
    return struct.pack("<H", len(case)) + case


def write(dest, data):
    with open(os.path.join(dest, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def unpack(dest, sources):
    os.makedirs(dest, exist_ok=True)
    n = 0
    for src in sources:
        for name in sorted(os.listdir(src)):
            with open(os.path.join(src, name), "rb") as f:
                for case in cases(f.read()):
                    if len(case) < 0x10000:
                        write(dest, frame(case))
                        n += 1
    return n


def wrap(dest, sources):
    os.makedirs(dest, exist_ok=True)
    n = 0
    for src in sources:
        for name in sorted(os.listdir(src)):
            with open(os.path.join(src, name), "rb") as f:
                write(dest, frame(f.read()[:0xFFFF]))
                n += 1
    return n


def pack(dest, src, limit):
    os.makedirs(dest, exist_ok=True)
    framed = []
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name), "rb") as f:
            for case in cases(f.read()):
                framed.append(frame(case))
    framed.sort(key=len)
    files, current = 0, b""
    for f in framed:
        if current and len(current) + len(f) > limit:
            write(dest, current)
            files, current = files + 1, b""
        current += f
    if current:
        write(dest, current)
        files += 1
    return len(framed), files


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "unpack":
        print(unpack(sys.argv[2], sys.argv[3:]), "cases")
    elif len(sys.argv) >= 4 and sys.argv[1] == "wrap":
        print(wrap(sys.argv[2], sys.argv[3:]), "cases")
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "pack":
        limit = int(sys.argv[4]) if len(sys.argv) == 5 else 4096
        n, files = pack(sys.argv[2], sys.argv[3], limit)
        print(f"{n} cases in {files} inputs")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
