# SPDX-License-Identifier: Apache-2.0
"""Every program the test suite runs is installed by .ci/install-deps or is
part of Debian 12's minimal system (debootstrap --variant=minbase), so the
README's test command works on a fresh machine (issue 32: the suite called
curl, which only happened to be on the CI machine).

How: the Python tests (tests/e2e/*.py) are parsed; every call that starts a
process (subprocess.run/Popen/check_output/call, the helpers spawn/sh) with a
literal program name is collected, looking through the wrappers "ip netns
exec NS", "timeout" and "env", and so is every shutil.which("NAME") and
literal "/usr/bin/NAME"; so are the shell scripts' commands that the
table below names and meson's find_program() calls.  Each program must be in
PROGRAMS with its Debian package, that package must be in install-deps'
list or in MINBASE, and where the program is installed, dpkg must agree on
its package (so the table cannot lie).  Our own binaries are named through
variables (t.FAIRGATE, ...) and are not programs to install."""
import ast
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# Program -> the Debian package that ships it (what dpkg -S says of its path).
PROGRAMS = {
    "apt-get": "apt", "bash": "bash", "cat": "coreutils", "cp": "coreutils", "dpkg-query": "dpkg",
    "ip": "iproute2", "ldd": "libc-bin", "promtool": "prometheus", "prometheus": "prometheus",
    "python3": "python3", "rm": "coreutils", "sh": "dash", "systemd-analyze": "systemd", "tmux": "tmux",
    "meson": "meson", "ninja": "ninja-build", "clang": "clang", "gcc": "gcc", "gnuplot": "gnuplot-nox",
    "sleep": "coreutils", "kill": "procps", "pkill": "procps", "ps": "procps", "etcd": "etcd-server",
    "timeout": "coreutils", "env": "coreutils", "mktemp": "coreutils", "awk": "mawk", "grep": "grep",
    "tail": "coreutils", "tee": "coreutils", "openssl": "openssl",
}
# Debian 12's minbase: the Essential and Priority required packages that
# debootstrap --variant=minbase installs (those the table above uses).
MINBASE = {"apt", "bash", "coreutils", "dash", "dpkg", "libc-bin", "mawk", "grep"}
# Packages a test installs itself when missing (with apt-get, as the
# cluster tests do for etcd) and says so.
SELF_INSTALLED = {"etcd-server"}

SPAWNERS = {"run", "Popen", "check_output", "check_call", "call", "spawn", "sh"}
WRAPPERS = {"timeout": 1, "env": 0}  # program -> positional arguments it takes before the wrapped one


def literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def program_of(argv):
    """The program an argv (a list of AST nodes) runs, or None when it is not
    a literal (our binaries, sys.executable)."""
    words = [literal(a) for a in argv]
    i = 0
    while i < len(words):
        w = words[i]
        if w is None:
            return None
        if w == "ip" and words[i + 1:i + 3] == ["netns", "exec"]:
            i += 4  # ip netns exec NS PROGRAM
            continue
        if w in WRAPPERS:
            i += 1 + WRAPPERS[w]
            while i < len(words) and words[i] is not None and (words[i].startswith("-") or "=" in words[i]):
                i += 1
            continue
        return w
    return None


def python_programs(path):
    found = set()
    for node in ast.walk(ast.parse(open(path).read(), path)):
        text = literal(node)
        if text and re.fullmatch(r"/(usr/)?s?bin/[\w.+-]+", text):
            found.add(os.path.basename(text))  # PROMETHEUS = "/usr/bin/prometheus"
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name == "which" and node.args and literal(node.args[0]):
            found.add(literal(node.args[0]))  # shutil.which("promtool")
            continue
        if name not in SPAWNERS or not node.args:
            continue
        first = node.args[0]
        if isinstance(first, (ast.List, ast.Tuple)):
            argv = first.elts
        elif isinstance(first, ast.BinOp) and isinstance(first.left, (ast.List, ast.Tuple)):
            argv = first.left.elts  # ["prog", ...] + rest
        elif name == "sh" and literal(first) is not None:
            argv = node.args  # sh("ip", "netns", ...)
        else:
            continue
        prog = program_of(argv)
        if prog:
            found.add(os.path.basename(prog))
    return found


def meson_programs():
    found = set()
    for path in glob.glob(os.path.join(ROOT, "**", "meson.build"), recursive=True):
        found |= set(re.findall(r"find_program\(\s*'([^']+)'", open(path).read()))
    return found


def shell_programs():
    """Programs of PROGRAMS that the suite's shell scripts run (as a command
    word: at a line's start or after |, &&, ||, ;, $( )."""
    found = set()
    scripts = [os.path.join(ROOT, "tests", "run.sh")] + glob.glob(os.path.join(ROOT, ".ci", "*"))
    for path in scripts:
        text = open(path).read()
        for prog in PROGRAMS:
            if re.search(r"(^|[|;&(]|\$\()\s*" + re.escape(prog) + r"(\s|$)", text, re.M):
                found.add(prog)
    return found


def install_deps_packages():
    text = open(os.path.join(ROOT, ".ci", "install-deps")).read()
    body = text[text.index("PACKAGES=("):]
    body = body[:body.index("\n)")]
    return {w for line in body.splitlines()[1:] for w in line.split("#")[0].split()}


def dpkg_package_of(prog):
    path = shutil.which(prog)
    if not path or not shutil.which("dpkg-query"):
        return None
    merged = "/usr" + path if not path.startswith("/usr") else path[4:]  # Debian 12's merged /usr
    for candidate in (path, merged, os.path.realpath(path)):
        p = subprocess.run(["dpkg-query", "-S", candidate], capture_output=True, text=True)
        if p.returncode == 0:
            return {line.split(":")[0].strip() for line in p.stdout.splitlines()}
    return None


def dpkg_depends(pkg):
    """The packages pkg depends on directly (python3 -> python3-minimal, which
    ships /usr/bin/python3; clang -> clang-14), when it is installed."""
    p = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", pkg], capture_output=True, text=True)
    if p.returncode != 0:
        return set()
    return {alt.split()[0].split(":")[0] for dep in re.split(r"[,|]", p.stdout) for alt in [dep.strip()] if alt}


def main():
    failures = []
    used = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "e2e", "*.py"))):
        for prog in python_programs(path):
            used.setdefault(prog, []).append(os.path.relpath(path, ROOT))
    for prog in meson_programs():
        used.setdefault(prog, []).append("meson.build")
    for prog in shell_programs():
        used.setdefault(prog, []).append("tests/run.sh or .ci/")
    deps = install_deps_packages()
    for prog, where in sorted(used.items()):
        pkg = PROGRAMS.get(prog)
        if pkg is None:
            failures.append(f"{prog} (run by {', '.join(where)}) is not in this check's table: add the "
                            f"package that ships it to .ci/install-deps and to PROGRAMS")
            continue
        if pkg not in deps and pkg not in MINBASE and pkg not in SELF_INSTALLED:
            failures.append(f"{prog} (run by {', '.join(where)}) comes from {pkg}, which .ci/install-deps "
                            f"does not install and Debian's minimal system lacks")
            continue
        owners = dpkg_package_of(prog)
        if owners is not None and pkg not in owners and not owners & dpkg_depends(pkg):
            failures.append(f"{prog}: the table says package {pkg} (or one it depends on), dpkg says {', '.join(sorted(owners))}")
            continue
        print(f"ok   {prog}: {pkg} ({'minbase' if pkg in MINBASE else 'install-deps' if pkg in deps else 'the test installs it'})"
              f" — {', '.join(sorted(set(where)))}")
    for f in failures:
        print("FAIL " + f)
    print(f"{len(used) - len(failures)} programs checked, {len(failures)} missing")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
