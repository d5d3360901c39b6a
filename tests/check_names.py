# SPDX-License-Identifier: Apache-2.0
"""Every fg_*/FG_* identifier that a comment or a document names exists in
the code (issue 27: comments named functions and fields that had been
renamed or removed, and kept saying so).

How: the C sources and headers are split into code and comments (strings
and character literals kept with the code); the identifiers the code holds
are the known names.  Each fg_*/FG_* name in a comment, in docs/*.md or in
README.md must be one of them, or, written as a family (`fg_fc_set_*`,
`FG_STAT_*`, or a name ending in `_`), the prefix of one.  Prints each
unknown name with where it is named; exits 1 if there is any."""
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
NAME = re.compile(r"\b(?:fg|FG)_[A-Za-z0-9_]*[A-Za-z0-9_](?:\*)?|\b(?:fg|FG)_\*?")


def split_c(text):
    """(code, comments) of a C file."""
    code, comments = [], []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            comments.append(text[i:end])
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            comments.append(text[i:end])
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            code.append(text[i:j + 1])
            i = j + 1
        else:
            j = i
            while j < n and text[j] not in "\"'/":
                j += 1
            if j == i:
                j += 1
            code.append(text[i:j])
            i = j
    return "".join(code), comments


def main():
    sources = [p for d in ("common", "dataplane", "control", "bench", "tests")
               for p in glob.glob(os.path.join(ROOT, d, "**", "*.[ch]"), recursive=True)]
    known = set()
    commented = []  # (name, where)
    for path in sources:
        code, comments = split_c(open(path, encoding="utf-8", errors="replace").read())
        known |= set(re.findall(r"\b(?:fg|FG)_\w+", code))
        rel = os.path.relpath(path, ROOT)
        for block in comments:
            for m in NAME.finditer(block):
                commented.append((m.group(0), rel))
    # Python and meson code names C identifiers too (the fuzz targets' entry points, test rigs).
    for path in glob.glob(os.path.join(ROOT, "**", "meson.build"), recursive=True):
        known |= set(re.findall(r"\b(?:fg|FG)_\w+", open(path).read()))
    docs = glob.glob(os.path.join(ROOT, "docs", "*.md")) + [os.path.join(ROOT, "README.md")]
    for path in docs:
        rel = os.path.relpath(path, ROOT)
        for m in NAME.finditer(open(path, encoding="utf-8").read()):
            commented.append((m.group(0), rel))
    unknown = {}
    for name, where in commented:
        stem = name.rstrip("*")
        family = name.endswith("*") or name.endswith("_")
        ok = stem in known or (family and any(k.startswith(stem) for k in known))
        if not ok:
            unknown.setdefault(name, set()).add(where)
    for name in sorted(unknown):
        print(f"FAIL {name}: named in {', '.join(sorted(unknown[name]))}, but no code defines or uses it")
    print(f"{len(set(n for n, _ in commented))} names in comments and docs checked, {len(unknown)} unknown")
    return 1 if unknown else 0


if __name__ == "__main__":
    sys.exit(main())
