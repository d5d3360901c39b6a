# SPDX-License-Identifier: Apache-2.0
"""`fairgate-bench backend --report FILE`: the most requests it had in
service at once and the answers sent, as one JSON line replaced whole every
100 ms and at exit.  8 then 3 concurrent 200 ms requests straight to a
backend of 8 workers: it reports 8, then (a fresh one) 3; the file is never
torn while it is rewritten; an unwritable report is refused at start."""
import json
import os
import select
import subprocess
import tempfile
import time

import fgtest as t

tmp = tempfile.mkdtemp(prefix="fg-report-")


def read_report(path):
    with open(path) as f:
        return json.loads(f.read())


def burst(addr, n, service_us=200000, first_id=1):
    """n requests sent at once from n sockets; the ids answered (bounded wait)."""
    host, port = addr.split(":")
    socks = [t.udp_client() for _ in range(n)]
    for i, s in enumerate(socks):
        s.sendto(t.request(first_id + i, user=b"u%d" % i, payload=t.service(service_us)), (host, int(port)))
    answered, deadline = [], time.time() + 5
    pending = list(socks)
    while pending and time.time() < deadline:
        ready, _, _ = select.select(pending, [], [], 0.5)
        for s in ready:
            h = t.decode_header(s.recv(2048))
            if h and h["type"] == t.RESPONSE:
                answered.append(h["id"])
            pending.remove(s)
    for s in socks:
        s.close()
    return sorted(answered)


for n in (8, 3):
    addr = f"127.0.0.1:{t.free_port()}"
    path = os.path.join(tmp, f"report-{n}.json")
    p = t.backend(addr, workers=8, extra=["--report", path], duration="20s")
    t.check(read_report(path) == {"max_in_service": 0, "served": 0}, f"{n}: the report exists at start, all zero")
    answered = burst(addr, n)
    t.check(answered == list(range(1, n + 1)), f"{n}: all {n} requests answered ({answered})")
    # Rewritten every 100 ms: the live file shows the burst within a few ticks.
    deadline = time.time() + 2
    rep = read_report(path)
    while rep["served"] < n and time.time() < deadline:
        time.sleep(0.05)
        rep = read_report(path)
    t.check(rep == {"max_in_service": n, "served": n}, f"{n}: live report max_in_service {n}, served {n} ({rep})")
    # One request at a time afterwards leaves the maximum where it was.
    t.check(burst(addr, 1, service_us=1000, first_id=100) == [100], f"{n}: a lone request answered")
    p.terminate()
    p.wait(timeout=10)
    rep = read_report(path)
    t.check(rep == {"max_in_service": n, "served": n + 1}, f"{n}: report at exit max {n}, served {n + 1} ({rep})")
    t.check(not os.path.exists(path + ".tmp"), f"{n}: no temporary file left behind")

# A reader polling as fast as it can never sees a partial line.
addr = f"127.0.0.1:{t.free_port()}"
path = os.path.join(tmp, "report-torn.json")
p = t.backend(addr, workers=8, extra=["--report", path], duration="20s")
reads = torn = 0
deadline = time.time() + 1.5
while time.time() < deadline and reads < 200000:
    try:
        read_report(path)
    except (ValueError, FileNotFoundError):
        torn += 1
    reads += 1
t.check(reads > 100 and torn == 0, f"{reads} reads over ~15 rewrites, {torn} torn or missing")
p.terminate()
p.wait(timeout=10)

# Refused at start: a report in a directory that does not exist, an empty name.
for bad, rc_want in ((os.path.join(tmp, "no-such-dir", "r.json"), 1), ("", 2)):
    r = subprocess.run([t.BENCH, "backend", "--listen", f"127.0.0.1:{t.free_port()}", "--report", bad,
                        "--duration", "2s"], capture_output=True, text=True, timeout=10)
    t.check(r.returncode == rc_want and "--report" in r.stderr,
            f"--report {bad!r} refused (exit {r.returncode}, want {rc_want}): {r.stderr.strip()[:100]}")

for name in os.listdir(tmp):
    os.unlink(os.path.join(tmp, name))
os.rmdir(tmp)
t.finish()
