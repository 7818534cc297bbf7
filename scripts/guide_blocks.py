#!/usr/bin/env python3
"""The Rust code blocks of the guide's chapters (`dlmd/guide/*.md`), for the checks that build
what rustdoc cannot (kernel crates, launches of them): `scripts/first-kernel.sh`.

A block is read as rustdoc reads it: a line `# code` is hidden from the page and compiled as
`code`, `##` at a line's start stands for `#`. The chapters mark such blocks `rust,ignore`,
with a comment that names this check.

Usage: python3 scripts/guide_blocks.py CHAPTER [HEADING] [N]

prints the N-th Rust block (the first unless given) after the line HEADING (the chapter's start
unless given) of `dlmd/guide/CHAPTER`, as the compiler reads it.
"""

import pathlib
import re
import sys

GUIDE = pathlib.Path(__file__).resolve().parent.parent / "dlmd" / "guide"
# A fenced block at the start of a line, its info string (`rust,ignore`) and its text.
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\n", re.S | re.M)
# `<!-- file: PATH -->` before a block: the file of a crate the block is, as printed.
FILE = re.compile(r"^<!-- file: (\S+) -->\n```[^\n]*\n(.*?)^```\n", re.S | re.M)


def chapter(name):
    """The text of `dlmd/guide/NAME`."""
    return (GUIDE / name).read_text()


def after(text, heading):
    """`text` from the line `heading` on (it must be there)."""
    return text[re.search("^" + re.escape(heading) + "$", text, re.M).start():]


def rust_blocks(text):
    """The Rust blocks of `text`, as printed (hidden lines with their `# `)."""
    return [body for info, body in FENCE.findall(text) if info.split(",")[0] == "rust"]


def files(text):
    """`[(PATH, text)]`: each block of `text` that follows `<!-- file: PATH -->`, as printed."""
    return FILE.findall(text)


def compiled(block):
    """`block` as the compiler reads it: hidden lines shown, `##` as `#`."""
    out = []
    for line in block.split("\n"):
        trimmed = line.strip()
        if trimmed.startswith("##"):
            out.append(line.replace("##", "#", 1))
        elif trimmed.startswith("# "):
            out.append(trimmed[2:])
        elif trimmed == "#":
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def block(name, heading=None, n=1):
    """The `n`-th Rust block of chapter `name` after `heading`, as the compiler reads it."""
    text = chapter(name)
    if heading:
        text = after(text, heading)
    return compiled(rust_blocks(text)[n - 1])


if __name__ == "__main__":
    args = sys.argv[1:]
    if not 1 <= len(args) <= 3:
        sys.exit(__doc__)
    sys.stdout.write(block(args[0], args[1] if len(args) > 1 and args[1] else None, int(args[2]) if len(args) > 2 else 1))
