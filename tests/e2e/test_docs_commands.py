# SPDX-License-Identifier: Apache-2.0
"""Every command the reader is told to run — each ```sh block of README.md
and docs/operations.md — runs, so the documents cannot drift from the
product.  What a test may not do to the machine is substituted, and only
that: free loopback ports for the documented ones (and port 0 for the HTTP
endpoint of a daemon started on the host), temporary files for
/tmp/fg*.sock and the reader's own configuration file, a unique network
namespace and DPDK file prefix, a scratch root for `install` and `ninja
install` (DESTDIR), and recording stand-ins for `systemctl`, `groupadd` and
`usermod`, which check their arguments.  `bash tests/run.sh` (the suite
itself) is checked to be what .ci/run runs instead of being run again.
Each block is bounded in time; whatever it started is stopped."""
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

import fgtest as t

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.abspath(t.BUILD)
BLOCK_TIMEOUT_S = 150
DOCS = ("README.md", "docs/operations.md")

work = tempfile.mkdtemp(prefix="fg-docs-")
shims = os.path.join(work, "bin")
root = os.path.join(work, "root")
os.makedirs(shims)
for d in ("etc/systemd/system", "usr/local/bin", "usr/local/share/doc"):  # what a Debian root has
    os.makedirs(os.path.join(root, d))
calls = os.path.join(work, "calls.log")

# Stand-ins for what would change the host: they check their arguments and record the call.
SHIMS = {
    "systemctl": r'''case "$*" in
  daemon-reload) ;;
  "enable --now fairgate") test -f "$FG_ROOT/etc/systemd/system/fairgate.service" || { echo "no unit installed" >&2; exit 1; } ;;
  *) echo "systemctl: unexpected: $*" >&2; exit 1 ;;
esac''',
    "groupadd": r'''[ $# -eq 1 ] && [[ "$1" =~ ^[a-z_][a-z0-9_-]*$ ]] || { echo "groupadd: bad arguments: $*" >&2; exit 1; }''',
    "usermod": r'''[ "$1" = -aG ] && [ $# -ge 3 ] || { echo "usermod: bad arguments: $*" >&2; exit 1; }''',
}
for name, body in SHIMS.items():
    p = os.path.join(shims, name)
    with open(p, "w") as f:
        f.write(f'#!/usr/bin/env bash\necho "{name} $*" >> "{calls}"\n{body}\n')
    os.chmod(p, stat.S_IRWXU)


def sh_blocks(path):
    text = open(os.path.join(REPO, path)).read()
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        if m.group(1) == "sh":
            yield text[:m.start()].count("\n") + 1, m.group(2)


def substitute(block, ports, tag):
    """The block as the test runs it (see the module's docstring)."""
    s = block
    for doc_port, port in ports.items():
        s = re.sub(rf"(?<=:){doc_port}\b", str(port), s)
    s = re.sub(r"/tmp/(fg1?)\.sock", lambda m: os.path.join(work, m.group(1) + ".sock"), s)
    s = s.replace("my-cluster-flowcontrol.yaml", os.path.join(work, "my-cluster-flowcontrol.yaml"))
    s = s.replace("--duration 10s", "--duration 2s")
    # The HTTP endpoint's fixed default port could be taken on a test machine.
    s = re.sub(r"(?m)^fairgate --", "fairgate --http 127.0.0.1:0 --", s)
    s = re.sub(r"\bnetns (add|exec|del) fg\b", rf"netns \1 {tag}", s)
    s = s.replace("--file-prefix=fg1", f"--file-prefix={tag}")
    s = s.replace("meson setup build && ninja -C build && ninja -C build install",
                  f"ninja -C {BUILD} && DESTDIR={root} ninja -C {BUILD} install")
    s = re.sub(r"(?<=\s)/(etc|usr/local)/", rf"{root}/\1/", s)
    # kubectl's convention: diff exits 1 when there are differences.
    s = "\n".join(re.sub(r"^(.*?)(\s+#.*)?$", r"\1 || [ $? -eq 1 ]\2", l)
                  if re.match(r"\s*fairgatectl .* diff ", l) else l for l in s.split("\n"))
    return s


def run_block(doc, line, block):
    tag = f"fgdoc{os.getpid()}x{line}"
    ports = {p: t.free_port() for p in ("7400", "7501", "7502")}
    script = substitute(block, ports, tag)
    path = os.path.join(work, f"block{line}.sh")
    with open(path, "w") as f:
        f.write("set -euo pipefail\n" + script)
    env = dict(os.environ, PATH=":".join([shims, os.path.join(BUILD, "dataplane"), os.path.join(BUILD, "control"),
                                          os.path.join(BUILD, "bench"), os.environ.get("PATH", "")]),
               FG_ROOT=root, EDITOR="true")
    # Output to a file: what the block leaves in the background would keep a pipe open.
    out_path = path + ".out"
    with open(out_path, "w") as out_f:
        p = subprocess.Popen(["bash", path], cwd=REPO, env=env, stdout=out_f, stderr=subprocess.STDOUT,
                             start_new_session=True)
    try:
        p.wait(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pass
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):  # what the block left running in the background
            try:
                os.killpg(p.pid, sig)
                time.sleep(0.5)
            except ProcessLookupError:
                break
        if f"netns add {tag}" in script:
            subprocess.run(["ip", "netns", "del", tag], capture_output=True)
    out = open(out_path, errors="replace").read() + ("" if p.returncode is not None else "(timed out)")
    t.check(p.returncode == 0, f"{doc}:{line}: the block runs (rc={p.returncode}) {out.strip()[-3000:]}")
    return out


try:
    seen = 0
    for doc in DOCS:
        for line, block in sh_blocks(doc):
            seen += 1
            if "bash tests/run.sh" in block:
                # The suite runs this file: check the command is CI's, and run the rest of the block.
                ci = open(os.path.join(REPO, ".ci", "run")).read()
                t.check("bash tests/run.sh" in ci, f"{doc}:{line}: `bash tests/run.sh` is what .ci/run runs")
                block = "\n".join(l for l in block.split("\n") if "bash tests/run.sh" not in l)
            if "my-cluster-flowcontrol.yaml" in block:
                with open(os.path.join(work, "my-cluster-flowcontrol.yaml"), "w") as f:
                    f.write(t.level_config())
            out = run_block(doc, line, block)
            if "bench/demo.sh" in block:
                t.check(re.search(r"(?m)^tenant-light: p99 .* — protected$", out) and "report: " in out,
                        f"{doc}:{line}: the demo's verdict shows the light tenant protected, and the report's path")
            if "ninja -C build install" in block:
                for f in ("usr/local/bin/fairgate", "usr/local/bin/fairgatectl", "etc/systemd/system/fairgate.service",
                          "etc/systemd/system/fairgate.service.d/dpdk.conf"):
                    t.check(os.path.exists(os.path.join(root, f)), f"{doc}:{line}: installs {f}")
    t.check(seen >= 5, f"the documents' runnable blocks were found ({seen})")
    log = open(calls).read() if os.path.exists(calls) else ""
    t.check("systemctl enable --now fairgate" in log and "groupadd fairgate-ops" in log,
            f"the host-changing commands were reached and checked ({log.strip()})")
finally:
    shutil.rmtree(work, ignore_errors=True)
t.finish()
