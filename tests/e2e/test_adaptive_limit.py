# SPDX-License-Identifier: Apache-2.0
"""serverConcurrencyLimitMode: Adaptive (issue 29).  A backend that executes
4 requests at once, behind a daemon that starts at 64 seats: the learned
limit comes down near 4 (what waits beyond it waits in fairgate's fair
queues, not in the backend's socket), the no-load latency is measured, and
the levels share what was learned.  The backend then takes 16 at once: the
limit grows.  status and /metrics show it; every request is answered once."""
import json
import os
import re
import subprocess
import signal
import tempfile
import time

import fgtest as t

control = os.path.join(tempfile.mkdtemp(prefix="fg-adaptive-"), "backend.ctl")
with open(control, "w") as f:
    f.write("capacity=4\n")
b0 = f"127.0.0.1:{t.free_port()}"
p0 = t.backend(b0, workers=16, extra=["--control", control])
log_path = os.path.join(os.path.dirname(control), "fairgate.log")
d = t.Daemon([b0], ["--seat-limit", "64", "--seat-limit-mode", "Adaptive", "--backend-timeout", "10s"], log=log_path)


def row(st):
    return next(b for b in st["backendPool"] if b["address"] == b0)


st = d.status()
t.check(st["serverConcurrencyLimitMode"] == "Adaptive", "status says Adaptive")
# Unused, it decays by a quarter a second: a slow start may have seen one.
t.check(48 <= row(st)["learnedLimitSeats"] <= 64,
        f"the limit starts at serverConcurrencyLimit ({row(st)['learnedLimitSeats']})")

lg = t.loadgen_start(d.addr, ["name=load,user=u,threads=32,service=10ms"], duration="14s", timeout="20s")
st = d.wait_status(lambda s: row(s)["learnedLimitSeats"] <= 12, timeout=8)
learned = row(st)["learnedLimitSeats"]
t.check(learned <= 12, f"the learned limit comes down near the backend's 4 ({learned} seats)")
time.sleep(2)
st = d.status()
learned = row(st)["learnedLimitSeats"]
t.check(2 <= learned <= 12, f"and stays near it ({learned} seats)")
t.check(5 <= row(st)["noloadLatencyMs"] <= 40, f"the no-load latency is measured ({row(st)['noloadLatencyMs']:.1f} ms)")
st2 = st
t.check(st["serverConcurrencyLimitInForce"] < 64,
        f"the levels share what was learned ({st['serverConcurrencyLimitInForce']} of the 64 it started at)")

# explain --limits: the derivation, step by step, in a table and as JSON.
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "explain", "--limits"], capture_output=True, text=True,
                   timeout=10)
t.check(p.returncode == 0 and "Adaptive" in p.stdout and b0 in p.stdout and "scaled by" in p.stdout,
        "explain --limits shows the derivation")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "explain", "--limits", "-o", "json"], capture_output=True,
                   text=True, timeout=10)
lim = json.loads(p.stdout)
# (the limit may have moved since the status above)
t.check(lim["mode"] == "Adaptive" and lim["serverConcurrencyLimit"] == 64 and lim["max"] == 256 and
        lim["backends"][0]["learnedLimitSeats"] >= 1 and 1 <= lim["inForce"] < 64,
        f"explain --limits -o json: mode, limits and backends ({lim['inForce']} in force)")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "explain", "--limits", "-f", "x.yaml"], capture_output=True,
                   text=True, timeout=10)
t.check(p.returncode == 2 and "no -f" in p.stderr, "explain --limits refuses a file: it asks the daemon")
_, metrics = t.http_get(f"http://{d.http_address()}/metrics")
m = re.search(r'^fairgate_server_concurrency_limit (\d+)', metrics, re.M)
t.check(m is not None and int(m.group(1)) < 64, "fairgate_server_concurrency_limit follows")
t.check(re.search(r'fairgate_backend_adaptive_limit_decisions_total\{backend="%s",reason="cut"\} [1-9]'
                  % re.escape(b0), metrics) is not None, "the cuts are counted")
t.check(re.search(r'fairgate_backend_noload_latency_seconds\{backend="%s"\} 0\.0' % re.escape(b0), metrics)
        is not None, "fairgate_backend_noload_latency_seconds")

# The backend now executes 16 at once: the limit grows.
with open(control, "w") as f:
    f.write("capacity=16\n")
p0.send_signal(signal.SIGHUP)
st = d.wait_status(lambda s: row(s)["learnedLimitSeats"] >= 14, timeout=8)
t.check(row(st)["learnedLimitSeats"] >= 14,
        f"with room at the backend the limit grows ({learned} -> {row(st)['learnedLimitSeats']} seats)")
res = t.loadgen_result(lg)
f = res["load"]
t.check(f["lost"] == 0, "every request is answered once")
t.check(f["responses"] > 0 and sum(f["rejected"].values()) == 0, f"nothing refused ({f['rejected']})")
log = open(log_path).read()
t.check(re.search(r'backend limit moved.*fromSeats=\d+ toSeats=\d+', log) is not None,
        "the log tells the limit's moves (backend limit moved)")
st = d.wait_idle()
t.check(t.invariant_holds(st), "invariant holds")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
