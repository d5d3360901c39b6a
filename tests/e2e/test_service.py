# SPDX-License-Identifier: Apache-2.0
"""The systemd unit in dist/: systemd-analyze verify accepts it and its DPDK
drop-in without a warning (skipped, said so, when systemd-analyze is
missing); its command lines are the daemon's own flags (the --check of
ExecStartPre passes on a configuration, ExecStart's flags are accepted);
and the daemon speaks sd_notify as the unit's Type=notify expects: READY=1
once serving, RELOADING=1 then READY=1 around a SIGHUP reload (what
ExecReload sends), STOPPING=1 at SIGTERM."""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import fgtest as t

DIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dist")
BIN_DIR = os.path.dirname(os.path.abspath(t.FAIRGATE))
unit = open(os.path.join(DIST, "fairgate.service")).read()
dropin = open(os.path.join(DIST, "fairgate-dpdk.conf")).read()


def values(text, key):
    return [m.group(1) for m in re.finditer(rf"^{key}=(.*)$", text, re.M)]


t.check(values(unit, "Type") == ["notify"], "Type=notify")
t.check(values(unit, "ExecReload") == ["/bin/kill -HUP $MAINPID"], "ExecReload sends SIGHUP")
t.check(values(unit, "RuntimeDirectory") == ["fairgate"], "RuntimeDirectory=fairgate (the control socket's)")
for key in ("NoNewPrivileges", "ProtectSystem", "CapabilityBoundingSet", "ReadWritePaths"):
    t.check(bool(values(unit, key)), f"hardening: {key}")

# systemd-analyze verify, on copies whose binaries are this build's.
tmp = tempfile.mkdtemp(prefix="fg-unit-")
try:
    def local(text):
        return text.replace("/usr/local/bin/", BIN_DIR + "/").replace("/usr/local/bin/fairgate", t.FAIRGATE)
    with open(os.path.join(tmp, "fairgate.service"), "w") as f:
        f.write(local(unit))
    os.mkdir(os.path.join(tmp, "fairgate.service.d"))
    with open(os.path.join(tmp, "fairgate.service.d", "dpdk.conf"), "w") as f:
        f.write(local(dropin))
    if shutil.which("systemd-analyze") is None:
        print("SKIP (this check only): systemd-analyze is missing (Debian package systemd; .ci/install-deps)")
    else:
        p = subprocess.run(["systemd-analyze", "verify", os.path.join(tmp, "fairgate.service")],
                           capture_output=True, text=True, timeout=60)
        t.check(p.returncode == 0 and "fairgate.service" not in p.stderr,
                f"systemd-analyze verify: unit and DPDK drop-in accepted, no warning ({p.stderr.strip()[-400:]})")
finally:
    shutil.rmtree(tmp)

# The command lines: the daemon's flags.
cfg = tempfile.mktemp(prefix="fg-unit-", suffix=".yaml", dir="/tmp")
with open(cfg, "w") as f:
    f.write(t.level_config())


def argv(line):
    args = shlex.split(line.replace("/etc/fairgate/fairgate.yaml", cfg))
    return [t.FAIRGATE] + args[1:]


pre = argv(values(unit, "ExecStartPre")[0])
p = subprocess.run(pre, capture_output=True, text=True, timeout=30)
t.check(p.returncode == 0 and "--check" in pre, f"ExecStartPre (--check) passes ({p.stderr.strip()[-200:]})")
for line in values(unit, "ExecStart") + [v for v in values(dropin, "ExecStart") if v]:
    a = argv(line)
    own = a[:a.index("--")] if "--" in a else a
    p = subprocess.run(own + ["--check"], capture_output=True, text=True, timeout=30)
    t.check(p.returncode == 0, f"ExecStart's flags are the daemon's: {' '.join(own[1:])} ({p.stderr.strip()[-200:]})")
os.unlink(cfg)

# sd_notify: a datagram socket stands in for systemd's.
ns_path = tempfile.mktemp(prefix="fg-notify-", suffix=".sock", dir="/tmp")
ns = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
ns.bind(ns_path)
ns.settimeout(5)
os.environ["NOTIFY_SOCKET"] = ns_path
b = f"127.0.0.1:{t.free_port()}"
t.backend(b)
d = t.Daemon([b])
del os.environ["NOTIFY_SOCKET"]


def messages(until, timeout=5):
    got, deadline = [], time.time() + timeout
    while time.time() < deadline and until not in got:
        try:
            got += ns.recv(4096).decode().split("\n")
        except socket.timeout:
            break
    return got


m = messages("READY=1")
t.check("READY=1" in m, f"READY=1 once serving ({m})")
t.check(d.status()["configGeneration"] == 1, "and the control socket answers")
with open(d.config_path, "w") as f:  # a change, so that the reload publishes a generation
    f.write(t.level_config(qll=7))
d.proc.send_signal(signal.SIGHUP)
m = messages("READY=1")
t.check(m[:1] == ["RELOADING=1"] and any(x.startswith("MONOTONIC_USEC=") for x in m) and m[-1] == "READY=1",
        f"SIGHUP: RELOADING=1, then READY=1 ({m})")
t.check(d.wait_status(lambda st: st["configGeneration"] == 2)["configGeneration"] == 2, "and the reload happened")
d.proc.send_signal(signal.SIGTERM)
m = messages("STOPPING=1")
t.check("STOPPING=1" in m, f"SIGTERM: STOPPING=1 ({m})")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
ns.close()
os.unlink(ns_path)
t.finish()
