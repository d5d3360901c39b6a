# SPDX-License-Identifier: Apache-2.0
"""fairgate-bench loadgen as a new user meets it (docs/bench.md), against a
small UDP server in this test that answers (RESPONSE) or refuses (REJECT
queue-full with a fixed retry-after) every request and records what it got:
the percentiles for answers and rejects, --interval lines whose deltas add up
to the totals, a warm-up not counted, a template flow reaching every tenant,
an open loop that stalls still timing from the schedule (coordinated omission),
retry-after honoured (far fewer sends), threads and rate together refused
(exit 2), and exit 3 when nothing answered or everything was refused."""
import json
import signal
import socket
import struct
import subprocess
import threading
import time

import fgtest as t

LAT_KEYS = {"p50", "p90", "p99", "p999", "max", "mean"}


class Server:
    """Answers every REQUEST with `kind` (RESPONSE, or REJECT queue-full
    carrying retry_after_ms); counts requests and the users they came from."""

    def __init__(self, kind, retry_after_ms=0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.addr = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.kind, self.retry_after_ms = kind, retry_after_ms
        self.requests, self.users, self.stop = 0, set(), False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while not self.stop:
            try:
                data, src = self.sock.recvfrom(2048)
            except socket.timeout:
                continue
            h = t.decode_header(data)
            if not h or h["type"] != 1:
                continue
            self.requests += 1
            self.users.update(v for k, v in t.parse_attrs(data) if k == 1)
            reason = 1 if self.kind == t.REJECT else 0
            retry = self.retry_after_ms if self.kind == t.REJECT else 0
            self.sock.sendto(struct.pack(t.HDR, 0x4647, 1, self.kind, 0, 40, h["id"], 0, 0, 0, 0, 0, reason, 0, retry),
                             src)

    def close(self):
        self.stop = True
        self.thread.join(timeout=5)
        self.sock.close()


def loadgen(target, flows, *extra, timeout=60):
    args = [t.BENCH, "loadgen", "--target", target] + list(extra)
    for f in flows:
        args += ["--flow", f]
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout)


# --- answers: percentiles, intervals, warm-up, a template flow --------------
srv = Server(t.RESPONSE)
p = loadgen(srv.addr, ["name=closed,user=solo,threads=2", "name=many,user=tenant-{1..300},rate=800"],
            "--json", "--interval", "100ms", "--warmup", "300ms", "--duration", "1s", "--timeout", "1s")
lines = [json.loads(l) for l in p.stdout.splitlines()]
t.check(p.returncode == 0 and lines and lines[-1]["type"] == "result", f"exit 0, the result last (rc {p.returncode})")
intervals = [l for l in lines if l["type"] == "interval"]
ts = [l["t"] for l in intervals]
t.check(len(intervals) >= 9 and ts == sorted(ts) and 0.9 <= ts[-1] <= 2.0,
        f"an interval line each 100 ms of the measured phase ({len(intervals)} lines, t {ts[:2]}..{ts[-1:]})")
res = {f["name"]: f for f in lines[-1]["flows"]}
for name, f in res.items():
    for key in ("sent", "responses", "lost", "deferred"):
        total = sum(x[key] for l in intervals for x in l["flows"] if x["name"] == name)
        t.check(total == f[key], f"{name}: the intervals' {key} add up to the total ({total} = {f[key]})")
    rej = sum(sum(x["rejected"].values()) for l in intervals for x in l["flows"] if x["name"] == name)
    t.check(rej == f["rejectedTotal"], f"{name}: the intervals' rejects add up ({rej} = {f['rejectedTotal']})")
    t.check(set(f["latencyMs"]) == LAT_KEYS and set(f["rejectLatencyMs"]) == LAT_KEYS and
            all(set(x["latencyMs"]) == LAT_KEYS for l in intervals for x in l["flows"]),
            f"{name}: p50 p90 p99 p99.9 max mean for answers, rejects and each interval")
    lat = f["latencyMs"]
    t.check(0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"] and lat["mean"] <= lat["max"],
            f"{name}: percentiles ordered ({lat})")
    t.check(sum(b[2] for b in f["histogramUs"]) == f["responses"] and
            all(b[0] <= b[1] for b in f["histogramUs"]) and
            [b[0] for b in f["histogramUs"]] == sorted(b[0] for b in f["histogramUs"]),
            f"{name}: histogramUs counts every answer, buckets ascending")
    merged = {}
    for l in intervals:
        for x in l["flows"]:
            if x["name"] == name:
                for lo, _hi, c in x["histogramUs"]:
                    merged[lo] = merged.get(lo, 0) + c
    t.check(merged == {b[0]: b[2] for b in f["histogramUs"]},
            f"{name}: the intervals' histogramUs merge into the result's (the runner's after-settle latency)")
    t.check(f["latencyP50Ms"] == lat["p50"] and f["latencyP99Ms"] == lat["p99"], f"{name}: the old keys stay")
    t.check(f["lost"] == 0 and f["responses"] == f["sent"] > 0, f"{name}: every request answered ({f['sent']})")
many = res["many"]
t.check(600 <= many["sent"] <= 1000, f"open loop: about 800/s over the 1 s measured ({many['sent']})")
t.check(srv.requests > res["closed"]["sent"] + many["sent"], f"the warm-up sent more, not counted "
        f"({srv.requests} received, {res['closed']['sent'] + many['sent']} counted)")
tenants = {u for u in srv.users if u.startswith(b"tenant-")}
t.check(many["tenants"] == 300 and len(tenants) == 300 and b"tenant-1" in tenants and b"tenant-300" in tenants,
        f"the template flow reached its 300 tenants, round-robin ({len(tenants)})")
t.check(not res["closed"]["retryAfter"] and many["retryAfter"], "retry-after: off for closed loops, on for open")
srv.close()

# --- coordinated omission: a stalled sender still times from the schedule ---
# The generator itself is stopped for 400 ms (SIGSTOP) mid-run: the sends due
# meanwhile go out late when it resumes, their latency counted from when they
# were due (so the max is about the stall, not the server's sub-ms answer).
srv = Server(t.RESPONSE)
lg = subprocess.Popen([t.BENCH, "loadgen", "--target", srv.addr, "--json", "--duration", "1500ms", "--timeout", "2s",
                       "--flow", "name=o,user=o,rate=200,arrivals=constant"], stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
time.sleep(0.6)
lg.send_signal(signal.SIGSTOP)
time.sleep(0.4)
lg.send_signal(signal.SIGCONT)
out, err = lg.communicate(timeout=30)
f = json.loads(out.splitlines()[-1])["flows"][0]
t.check(lg.returncode == 0 and 280 <= f["sent"] <= 301 and f["lateSends"] >= 60 and f["maxBehindMs"] >= 300,
        f"a 400 ms stall: the schedule's sends still go out, late ({f['sent']} sent, {f['lateSends']} late, "
        f"{f['maxBehindMs']:.0f} ms behind)")
t.check(f["latencyMs"]["max"] >= 300 and f["latencyMs"]["p50"] < 50,
        f"their latency runs from the intended send (max {f['latencyMs']['max']:.0f} ms, p50 {f['latencyMs']['p50']:.2f} ms)")
srv.close()

# --- retry-after: a refused client backs off --------------------------------
counts = {}
for mode in ("on", "off"):
    srv = Server(t.REJECT, retry_after_ms=200)
    p = loadgen(srv.addr, ["name=r,user=r,rate=400"], "--json", "--duration", "1s", "--timeout", "1s",
                "--retry-after", mode)
    f = json.loads(p.stdout.splitlines()[-1])["flows"][0]
    counts[mode] = (srv.requests, f)
    t.check(p.returncode == 3 and "no request got a response" in p.stderr,
            f"--retry-after {mode}: every request refused: exit 3 ({p.returncode}, {p.stderr.strip()})")
    t.check(f["rejected"]["queue-full"] == f["sent"] and f["rejectLatencyMs"]["max"] > 0,
            f"--retry-after {mode}: each refusal counted, with its latency ({f['sent']})")
    srv.close()
on, off = counts["on"], counts["off"]
t.check(on[0] <= 40 and off[0] >= 200 and on[1]["deferred"] >= 300,
        f"open loop: 200 ms retry-after honoured: {on[0]} sends (deferred {on[1]['deferred']}) against {off[0]}")
srv = Server(t.REJECT, retry_after_ms=200)
t0 = time.time()
p = loadgen(srv.addr, ["name=c,user=c,threads=1,count=5,retry-after=on"], "--json", "--duration", "5s")
took = time.time() - t0
f = json.loads(p.stdout.splitlines()[-1])["flows"][0]
t.check(f["sent"] == 5 and f["rejectLatencyMs"]["p50"] < 50 and 0.8 <= took < 4,
        f"closed loop with retry-after=on: 5 sends 200 ms apart ({f['sent']} in {took:.2f} s)")
srv.close()

# --- usage errors and nothing listening -------------------------------------
port = t.free_port()
for flows, what in ((["name=both,user=u,threads=2,rate=10"], "threads= (closed loop) and rate= (open loop)"),
                    (["name=tpl,user=t-{5..1}"], "PREFIX{FIRST..LAST}SUFFIX"),
                    (["name=tpl,user=t-{1..2000000}"], "at most 1000000"),
                    (["name=n,user=u,threads=0"], "bad value"),
                    (["name=n,user=u,arrivals=constant"], "arrivals= needs an open loop")):
    p = loadgen(f"127.0.0.1:{port}", flows)
    t.check(p.returncode == 2 and what in p.stderr, f"{flows[0]}: exit 2 naming the problem ({p.stderr.strip()})")
p = loadgen(f"127.0.0.1:{port}", ["name=x,user=u,threads=1"], "--duration", "300ms", "--timeout", "300ms")
t.check(p.returncode == 3 and "no request got a response" in p.stderr,
        f"nothing listening: exit 3 ({p.returncode}, {p.stderr.strip()})")
t.finish()
