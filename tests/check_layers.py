# SPDX-License-Identifier: Apache-2.0
"""docs/design.md's map matches the tree, and common/'s folders keep their
layering (issue 27).

- "Folders": each common/ folder's row says what it may include (other
  folders, or "nothing"); every #include "x.h" of a file in a folder must
  name a header of its own folder or of one it may include.  The rows must
  cover exactly the folders that exist.
- "Modules": every path a row names exists, and every module of common/,
  dataplane/ and control/ (a .c or .h stem; name_part.c is part of name, and
  name_int.h / name_types.h too) is named by a row.
Prints each problem; exits 1 if there is any."""
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def section(text, title):
    start = text.index("## " + title)
    end = text.find("\n## ", start + 3)
    return text[start:end if end > 0 else len(text)]


def main():
    design = open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8").read()
    problems = []

    # --- folders and their allowed includes ---
    folders = {}
    for row in section(design, "Folders").splitlines():
        m = re.match(r"\|\s*`common/([a-z]+)/`\s*\|[^|]*\|([^|]*)\|", row)
        if m:
            folders[m.group(1)] = set(re.findall(r"`([a-z]+)`", m.group(2)))
    on_disk = {d for d in os.listdir(os.path.join(ROOT, "common")) if os.path.isdir(os.path.join(ROOT, "common", d))}
    for d in sorted(on_disk ^ set(folders)):
        problems.append(f"folder common/{d}/: {'not in' if d in on_disk else 'in'} design.md's Folders table"
                        f"{'' if d in on_disk else ' but not on disk'}")
    home = {}  # header -> folder
    for d in on_disk:
        for h in glob.glob(os.path.join(ROOT, "common", d, "*.h")):
            home[os.path.basename(h)] = d
    for d in sorted(on_disk & set(folders)):
        for path in sorted(glob.glob(os.path.join(ROOT, "common", d, "*.[ch]"))):
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                m = re.match(r'#include "([^"]+)"', line)
                if not m or m.group(1) not in home:
                    continue  # system headers, generated files
                to = home[m.group(1)]
                if to != d and to not in folders[d]:
                    problems.append(f"common/{d}/{os.path.basename(path)}:{n} includes {m.group(1)} of common/{to}/, "
                                    f"which common/{d}/ may not include (design.md, Folders)")

    # --- the module map ---
    modules = section(design, "Modules")
    named = set(re.findall(r"`((?:common|dataplane|control|bench)/[a-z_/.]+?)`", modules))
    for p in sorted(named):
        base = os.path.join(ROOT, p.rstrip("/"))
        if not (os.path.exists(base) or glob.glob(base + ".*")):
            problems.append(f"design.md's Modules names {p}, which does not exist")
    stems = {n.rstrip("/").rsplit(".", 1)[0] if n.endswith((".c", ".h", ".json")) else n.rstrip("/") for n in named}
    for d in ["common/" + f for f in sorted(on_disk)] + ["dataplane", "control", "control/cli"]:
        for stem in sorted({f"{d}/{os.path.basename(p)[:-2]}" for p in glob.glob(os.path.join(ROOT, d, "*.[ch]"))}):
            parts = stem.split("/")[-1].split("_")
            covered = any("/".join(stem.split("/")[:-1] + ["_".join(parts[:k])]) in stems for k in range(1, len(parts) + 1))
            if not covered:
                problems.append(f"{stem}: no row of design.md's Modules names it")
    for p in problems:
        print("FAIL " + p)
    print(f"{len(folders)} folders, {len(named)} module paths checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
