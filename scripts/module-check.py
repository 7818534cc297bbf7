#!/usr/bin/env python3
"""Keeps the library's rooms apart: no import circle among the modules of `dlmd/src`, and no
library file over 600 lines.

A circle is counted between siblings: where a module refers to another (`crate::a::b`,
`super::c`, in `use` lines or paths in code), the reference is an edge between the two
children of their closest common parent that hold them; a parent and its own children may
refer to each other (a module re-exports what its children define). Comments are left out, so
doc links do not count. Run from the repository root; `--self-test` checks the check on a
made-up tree with one circle and one long file.

Usage: python3 scripts/module-check.py [SRC_DIR] [--self-test]
"""

import os
import re
import sys
import tempfile

MAX_LINES = 600


def modules(root):
    """Each module's path (a tuple of names; the crate root is ()) and its file."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts in (["lib"], ["main"]):
                parts = []
            found[tuple(parts)] = path
    return found


def references(module, text, known):
    """The modules `text` (the source of `module`) refers to."""
    text = re.sub(r"//[^\n]*", "", text)
    targets = set()

    def resolve(path):
        for n in range(len(path), 0, -1):
            if tuple(path[:n]) in known:
                return tuple(path[:n])
        return None

    for m in re.finditer(r"\bcrate::((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text):
        targets.add(resolve(m.group(1).split("::")))
    for m in re.finditer(r"\b((?:super::)+)((?:[a-z_][a-z0-9_]*::)*[a-z_][a-z0-9_]*)", text):
        up = m.group(1).count("super")
        if up <= len(module):
            targets.add(resolve(list(module[: len(module) - up]) + m.group(2).split("::")))
    # `use crate::{a::b, c}` and `use super::{d, e::f}`: each name in the braces.
    for m in re.finditer(r"\b(crate|(?:super::)*super)::\{([^}]*)\}", text):
        base = [] if m.group(1) == "crate" else list(module[: len(module) - m.group(1).count("super")])
        for item in m.group(2).split(","):
            item = item.strip().split(" as ")[0]
            if re.fullmatch(r"[a-z_][a-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*", item):
                targets.add(resolve(base + item.split("::")))
    targets.discard(None)
    targets.discard(module)
    return targets


def sibling_edges(known):
    """`{parent: {(child, child)}}`: each reference as an edge between siblings."""
    edges = {}
    for module, path in known.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for target in references(module, text, known):
            k = 0
            while k < min(len(module), len(target)) and module[k] == target[k]:
                k += 1
            if k in (len(module), len(target)):
                continue  # a module and its ancestor
            edges.setdefault(module[:k], set()).add((module[k], target[k]))
    return edges


def circles(edges):
    """The strongly connected groups of more than one sibling, per parent (Tarjan)."""
    found = []
    for parent, pairs in sorted(edges.items()):
        graph = {}
        for a, b in pairs:
            graph.setdefault(a, set()).add(b)
            graph.setdefault(b, set())
        index, low, stack, on_stack, counter = {}, {}, [], set(), [0]

        def visit(v):
            index[v] = low[v] = counter[0]
            counter[0] += 1
            stack.append(v)
            on_stack.add(v)
            for w in sorted(graph[v]):
                if w not in index:
                    visit(w)
                    low[v] = min(low[v], low[w])
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    inner = sorted((a, b) for a, b in pairs if a in group and b in group)
                    found.append(("::".join(parent) or "crate", sorted(group), inner))

        for v in sorted(graph):
            if v not in index:
                visit(v)
    return found


def long_files(known):
    out = []
    for path in sorted(known.values()):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            out.append((path, n))
    return out


def check(root):
    known = modules(root)
    found = circles(sibling_edges(known))
    for parent, group, inner in found:
        print(f"import circle in {parent}: {' <-> '.join(group)}")
        for a, b in inner:
            print(f"    {a} -> {b}")
    long = long_files(known)
    for path, n in long:
        print(f"{path}: {n} lines (at most {MAX_LINES}: split it by concept)")
    print(f"{len(known)} modules, {len(found)} import circles, {len(long)} files over {MAX_LINES} lines")
    return not found and not long


def self_test():
    with tempfile.TemporaryDirectory() as root:
        files = {
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::b::Thing;\n",
            "b/mod.rs": "mod inner;\npub use inner::Thing;\n",
            "b/inner.rs": "use crate::a::Other; // crate::c::Z in a comment\npub struct Thing;\n",
            "c.rs": "use super::{a::Other, b};\n" + "\n" * MAX_LINES,
        }
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        known = modules(root)
        found = circles(sibling_edges(known))
        assert [(p, g) for p, g, _ in found] == [("crate", ["a", "b"])], found
        assert [os.path.basename(p) for p, _ in long_files(known)] == ["c.rs"]
        assert references(("c",), files["c.rs"], known) == {("a",), ("b",)}
    print("module-check: the self-test found its circle and its long file")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--self-test"]
    if "--self-test" in sys.argv:
        self_test()
    sys.exit(0 if check(args[0] if args else "dlmd/src") else 1)
