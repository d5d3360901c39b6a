# SPDX-License-Identifier: Apache-2.0
"""Record the series docs/alerts/fairgate-alerts.test.yml's dead-backend
case is built from: a daemon (default settings, 2 workers) whose one
backend never answers, a trickle of requests (2 closed-loop threads), and
fairgate_backend_state{state} scraped every 15 s for 3 minutes.  Prints one
line per scrape: seconds, then up/ejected/probing (workers in each state).

Usage: FAIRGATE_BUILD=build python3 tests/data/record_dead_backend_series.py
Bounded: 3 minutes, loopback only."""
import os
import re
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import fgtest as t  # noqa: E402

dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # bound, never read: no answer, no ICMP
dead.bind(("127.0.0.1", 0))
d = t.Daemon([f"127.0.0.1:{dead.getsockname()[1]}"], ["--workers", "2"])
lg = t.loadgen_start(d.addr, ["name=trickle,user=u,threads=2"], duration="185s", timeout="10s")
start = time.time()
for k in range(13):
    time.sleep(max(0.0, start + 15 * k - time.time()))
    _, m = t.http_get(f"http://{d.http_address()}/metrics")
    state = {s: 0 for s in ("up", "ejected", "probing")}
    for s, v in re.findall(r'^fairgate_backend_state\{backend="[^"]+",state="(\w+)"\} (\d+)', m, re.M):
        state[s] = int(v)
    print(f"{15 * k} {state['up']} {state['ejected']} {state['probing']}", flush=True)
lg.kill()
d.stop()
