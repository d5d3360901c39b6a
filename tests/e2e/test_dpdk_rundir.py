# SPDX-License-Identifier: Apache-2.0
"""No stale DPDK runtime directory (--file-prefix's, under /var/run/dpdk):
not after a DPDK-mode daemon exits (whose DPDK lines went into its JSON log
meanwhile, source=dpdk), not after start-ups that fail after EAL made it
(no Ethernet port; more workers than lcores; EAL's own memory set-up
failing), and not after fairgate-bench dataplane."""
import json
import os
import subprocess
import tempfile

import fgtest as t

ROOT = "/var/run/dpdk" if os.geteuid() == 0 else os.path.join(
    os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
EAL = ["--no-huge", "-m", "512", "--no-pci", "--no-shconf", "-l", "0"]


def rundir(prefix):
    return os.path.join(ROOT, prefix)


# A daemon on a null port: the directory exists while it runs, not after.
prefix = f"fgrun{os.getpid()}"
log = tempfile.mktemp(prefix="fg-rundir-", suffix=".log", dir="/tmp")
d = t.Daemon(["192.0.2.10:7501@02:00:00:00:00:0a"], ["--log-format", "json"], listen_ip="192.0.2.2",
             eal=EAL + [f"--file-prefix={prefix}", "--vdev=net_null0"], log=log)
t.check(os.path.isdir(rundir(prefix)), f"EAL's runtime directory while the daemon runs ({rundir(prefix)})")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.check(not os.path.exists(rundir(prefix)), "no runtime directory after a clean exit")
docs = [json.loads(line) for line in open(log) if line.strip()]
dpdk = [x for x in docs if x.get("source") == "dpdk"]
t.check(dpdk and all(x["level"] in ("debug", "info", "warn", "error") for x in dpdk),
        f"DPDK's own lines are JSON log lines with source=dpdk ({len(dpdk)}: {dpdk[:1]})")
os.unlink(log)


def failing(name, extra_flags, eal, want_rc):
    prefix = f"fgrun{os.getpid()}{name}"
    sock = tempfile.mktemp(prefix="fg-", suffix=".sock", dir="/tmp")
    p = subprocess.run([t.FAIRGATE, "--io", "dpdk", "--listen", "192.0.2.2:7400", "--control-socket", sock,
                        "--http", "off"] + extra_flags + ["--"] + eal + [f"--file-prefix={prefix}"],
                       capture_output=True, text=True, timeout=60)
    t.check(p.returncode == want_rc, f"{name}: the start fails (rc {p.returncode}) {p.stderr.strip()[-200:]}")
    t.check(not os.path.exists(rundir(prefix)), f"{name}: no runtime directory left")


failing("noport", [], EAL, 1)                                     # EAL up, no Ethernet port
failing("lcores", ["--workers", "2"], EAL + ["--vdev=net_null0"], 2)  # EAL up, one lcore for two workers
failing("nomem", [], ["--no-huge", "-m", "1", "--no-pci", "--no-shconf", "-l", "0"], 1)  # EAL's own set-up fails

before = set(os.listdir(ROOT)) if os.path.isdir(ROOT) else set()
p = subprocess.Popen([t.BENCH, "dataplane", "--duration", "1s", "--flows", "2000", "--json"],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
out, err = p.communicate(timeout=120)
t.check(p.returncode == 0, f"fairgate-bench dataplane runs ({err.strip()[-200:]})")
t.check(not os.path.exists(rundir(f"fgbench{p.pid}")), "no runtime directory after fairgate-bench dataplane")
after = set(os.listdir(ROOT)) if os.path.isdir(ROOT) else set()
t.check(not (after - before), f"nothing new under {ROOT} ({sorted(after - before)})")
t.finish()
