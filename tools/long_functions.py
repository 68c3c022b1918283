#!/usr/bin/env python3
"""Functions over 80 lines in src/ and python/src/ (issue 38: none without a
listed reason). Each one must be in tools/long_functions.txt as
`path::name  reason`; a listed function that is no longer over the limit
must leave the list, so it only shrinks. Exit 1 naming what differs.

A function runs from its `fn` line to the line that closes it: `}` at the
`fn` line's indentation (rustfmt's layout, which CI checks)."""

import os
import re
import sys

LIMIT = 80
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))? )?(?:const )?(?:async )?(?:unsafe )?(?:extern \"C\" )?fn ([A-Za-z0-9_]+)")


def functions(path: str):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        indent, name = m.group(1), m.group(2)
        # The signature ends at a line ending in `{` (a body) or `;` (none).
        j = i
        while j < len(lines) and not lines[j].rstrip().endswith(("{", ";")):
            j += 1
        if j == len(lines) or lines[j].rstrip().endswith(";"):
            continue
        end = next((k for k in range(j + 1, len(lines)) if lines[k] == indent + "}"), None)
        if end is not None:
            yield name, i + 1, end - i + 1


def main() -> int:
    found = {}
    for base in ("src", os.path.join("python", "src")):
        for d, _, files in os.walk(os.path.join(ROOT, base)):
            for f in sorted(files):
                if f.endswith(".rs"):
                    path = os.path.join(d, f)
                    rel = os.path.relpath(path, ROOT)
                    for name, line, n in functions(path):
                        if n > LIMIT:
                            found[f"{rel}::{name}"] = (line, n)
    listed = {}
    with open(os.path.join(ROOT, "tools", "long_functions.txt"), encoding="utf-8") as f:
        for raw in f:
            raw = raw.strip()
            if raw and not raw.startswith("#"):
                key, _, reason = raw.partition(" ")
                if not reason.strip():
                    print(f"long_functions.txt: {key} has no reason", file=sys.stderr)
                    return 1
                listed[key] = reason.strip()
    bad = 0
    for key, (line, n) in sorted(found.items()):
        if key not in listed:
            print(f"{key} (line {line}) is {n} lines, over {LIMIT}, and not in "
                  "tools/long_functions.txt", file=sys.stderr)
            bad += 1
    for key in sorted(set(listed) - set(found)):
        print(f"{key} is listed in tools/long_functions.txt but is not over {LIMIT} lines "
              "(or not found): take it off the list", file=sys.stderr)
        bad += 1
    print(f"long functions: {len(found)} over {LIMIT} lines, all listed" if not bad
          else f"long functions: {bad} problem(s)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
