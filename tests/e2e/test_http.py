# SPDX-License-Identifier: Apache-2.0
"""The HTTP endpoint (control/http.h): /healthz, /readyz (503 while draining),
/metrics checked by promtool and against what a load generator saw; bad
methods, paths, query parameters, a request line and headers far too large;
100 slow connections that never finish while UDP and the control socket keep
serving.  Every wait and loop is bounded."""
import re
import shutil
import socket
import subprocess
import threading
import time

import fgtest as t

def request(addr, raw, timeout=5.0):
    """(status or None, headers dict, body) of raw bytes sent on a new connection."""
    return t.http_raw(addr, raw, timeout)[:3]


def get(addr, path, method="GET", extra=b""):
    return request(addr, f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n".encode() + extra + b"\r\n")


def samples(text):
    """{(name, frozenset(labels)): value} of an exposition."""
    out = {}
    for ln in text.splitlines():
        if not ln or ln.startswith("#"):
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', ln)
        if not m:
            raise ValueError("unparsable sample line: " + ln)
        labels = frozenset(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def metric(s, name, **labels):
    return s.get((name, frozenset(labels.items())))


b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=8)
# Few seats and short queues: the load below gets both answers and queue-full.
d = t.Daemon([b], ["--seat-limit", "2", "--queue-wait", "10s", "--shutdown-grace", "20s"], level=dict(qll=2))
addr = d.http_address()
t.check(re.match(r"127\.0\.0\.1:\d+$", addr) is not None and not addr.endswith(":0"),
        f"status reports the bound HTTP address ({addr})")

# Health and readiness.
st, hd, body = get(addr, "/healthz")
t.check(st == 200 and body == "ok\n", f"/healthz 200 ok ({st} {body!r})")
deadline = time.time() + 5
st = None
while time.time() < deadline and st != 200:
    st, _, body = get(addr, "/readyz")
    time.sleep(0.05)
t.check(st == 200, f"/readyz 200 once the workers poll ({st} {body!r})")
st, hd, _ = get(addr, "/healthz", method="HEAD")
t.check(st == 200, "HEAD /healthz 200")

# Bad requests: each a status and one line.
st, _, body = get(addr, "/nope")
t.check(st == 404 and body.count("\n") == 1, f"unknown path: 404 and one line ({st} {body!r})")
t.check(all(p in body for p in ("/metrics", "/healthz", "/readyz", "/debug/fairgate/load", "dump_priority_levels",
                                 "dump_queues", "dump_requests", "pendingrequests")),
        "the 404 names every path served")
st, hd, body = get(addr, "/metrics", method="POST", extra=b"Content-Length: 0\r\n")
t.check(st == 405 and hd.get("allow") == "GET, HEAD", f"POST: 405 with Allow: GET, HEAD ({st} {hd.get('allow')})")
st, _, body = get(addr, "/metrics?debug=1")
t.check(st == 400 and "debug" in body and body.count("\n") == 1, f"query parameter: 400 with the reason ({st} {body!r})")
st, _, body = get(addr, "/readyz?%0a%1b=x")
t.check(st == 400 and "\x1b" not in body and body.count("\n") == 1, f"hostile parameter name printed safely ({body!r})")
st, _, _ = get(addr, "/" + "a" * 100000)
t.check(st in (None, 400, 414, 431), f"a 100 kB request line is refused ({st})")
st, _, _ = get(addr, "/healthz", extra=b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 1000) for i in range(100)))
t.check(st in (None, 400, 413, 431), f"100 kB of headers are refused ({st})")
st, _, body = get(addr, "/healthz")
t.check(st == 200, "still serving after the oversized requests")

# Metrics against a short load run.
res = t.loadgen(d.addr, ["name=m,user=m,threads=30,service=20ms"], duration="2s", timeout="5s")
f = res["m"]
stat = d.wait_idle()
st, hd, body = get(addr, "/metrics")
t.check(st == 200 and hd.get("content-type") == "text/plain; version=0.0.4; charset=utf-8",
        f"/metrics 200 with the 0.0.4 content type ({st} {hd.get('content-type')})")
promtool = shutil.which("promtool")
if promtool:
    pc = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=30)
    t.check(pc.returncode == 0, f"promtool check metrics accepts the scrape ({pc.stdout.strip()} {pc.stderr.strip()})")
else:
    print("SKIP promtool check metrics: promtool is not installed (Debian package prometheus; .ci/install-deps)")
s = samples(body)
c = stat["counters"]
t.check(f["sent"] > 0 and f["lost"] == 0 and f["responses"] > 0 and f["rejected"]["queue-full"] > 0,
        f"the load generator's requests were answered or rejected ({f['sent']} sent)")
t.check(metric(s, "fairgate_requests_received_total") == f["sent"],
        f"requests received = the client's sent ({metric(s, 'fairgate_requests_received_total')} vs {f['sent']})")
t.check(metric(s, "fairgate_requests_responded_total") == f["responses"],
        f"responded = the client's responses ({metric(s, 'fairgate_requests_responded_total')} vs {f['responses']})")
rej = sum(v for (n, _), v in s.items() if n == "fairgate_requests_rejected_total")
t.check(rej == f["rejectedTotal"], f"rejected, all reasons = the client's ({rej} vs {f['rejectedTotal']})")
t.check(metric(s, "fairgate_requests_rejected_total", reason="queue-full") == f["rejected"]["queue-full"],
        "queue-full rejects = the client's")
workers = [str(w) for w in range(t.WORKERS)]
t.check(sum(metric(s, "fairgate_worker_rx_packets_total", worker=w) for w in workers) == c["datagramsReceived"],
        "the workers' rx packets = status' datagramsReceived")
t.check(metric(s, "fairgate_config_generation") == stat["configGeneration"], "config generation = status'")
t.check(metric(s, "fairgate_build_info", version=stat["version"]) == 1, "build info carries the version")
t.check(metric(s, "fairgate_flowcontrol_nominal_limit_seats", priority_level=t.TEST_LEVEL) is not None and
        metric(s, "fairgate_flowcontrol_current_limit_seats", priority_level=t.TEST_LEVEL) ==
        t.level_of(stat)["seatLimit"], "the test level's seat limits are exported")
t.check(metric(s, "fairgate_buffers_in_use") == 0, "no buffer in use once idle")
for name in ("process_resident_memory_bytes", "process_start_time_seconds", "process_open_fds", "process_max_fds"):
    t.check((metric(s, name) or 0) > 0, f"{name} present and positive")
t.check(metric(s, "process_cpu_seconds_total") is not None, "process_cpu_seconds_total present")
t.check(abs(metric(s, "process_start_time_seconds") - time.time()) < 600, "process_start_time_seconds is a recent Unix time")
t.check(not any("flow" in dict(k).keys() or "user" in dict(k).keys() for _, k in s), "no label names a flow or client")

# Kubernetes' APF set per (priority_level, flow_schema), against the client.
pl = dict(priority_level=t.TEST_LEVEL, flow_schema="everyone")


def hist(name, **labels):
    """(count, sum, {le: cumulative}) of one histogram series."""
    want = set(labels.items())
    buckets = {dict(k)["le"]: v for (n, k), v in s.items() if n == name + "_bucket" and want <= set(k)}
    return metric(s, name + "_count", **labels), metric(s, name + "_sum", **labels), buckets


qf = f["rejected"]["queue-full"]
t.check(metric(s, "fairgate_flowcontrol_dispatched_requests_total", **pl) == f["responses"],
        f"dispatched_requests_total = the client's responses ({metric(s, 'fairgate_flowcontrol_dispatched_requests_total', **pl)})")
t.check(metric(s, "fairgate_flowcontrol_rejected_requests_total", reason="queue-full", **pl) == qf,
        "rejected_requests_total{reason=queue-full} = the client's queue-full")
for g in ("current_inqueue_requests", "current_inqueue_seats", "current_executing_requests", "current_executing_seats"):
    t.check(metric(s, "fairgate_flowcontrol_" + g, **pl) == 0, f"{g} is 0 once idle")
n, total, b_ = hist("fairgate_flowcontrol_request_wait_duration_seconds", execute="true", **pl)
t.check(n == f["responses"] and b_.get("+Inf") == n, f"waits of dispatched requests: one per response ({n})")
t.check(all(b_[a] <= b_[c] for a, c in zip(["0", "0.005", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "15"],
                                           ["0.005", "0.02", "0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10", "15", "30"])),
        f"wait buckets are Kubernetes' and cumulative ({sorted(b_)})")
n, _, _ = hist("fairgate_flowcontrol_request_wait_duration_seconds", execute="false", **pl)
t.check(n == f["rejectedTotal"], f"waits of rejected requests: one per reject ({n} vs {f['rejectedTotal']})")
n, total, _ = hist("fairgate_flowcontrol_request_execution_seconds", type="regular", **pl)
t.check(n == f["responses"] and total >= 0.015 * n, f"execution: one per response, ~20 ms each ({n}, {total:.2f} s)")
n, _, b_ = hist("fairgate_flowcontrol_work_estimated_seats", **pl)
t.check(n == f["sent"] and b_.get("1") == n, f"work_estimated_seats: one per request, all 1 seat ({n})")
n, _, b_ = hist("fairgate_flowcontrol_request_queue_length_after_enqueue", **pl)
t.check(n is not None and 0 < n <= f["sent"] - qf and b_.get("10") == n,
        f"queue lengths after enqueue: at most queueLengthLimit 2 ({n})")
t.check(metric(s, "fairgate_flowcontrol_request_dispatch_no_accommodation_total", **pl) is not None,
        "no_accommodation is exported")
t.check(any((metric(s, "fairgate_flowcontrol_current_r", priority_level=t.TEST_LEVEL, worker=w) or 0) > 0
            for w in workers), "current_r of the level that served moved on")
t.check(0 <= metric(s, "fairgate_worker_busy_ratio", worker="0") <= 1, "busy ratio in [0, 1]")
t.check(metric(s, "fairgate_backend_state", backend=b, state="up") == t.WORKERS and
        metric(s, "fairgate_backend_outstanding_seats", backend=b) == 0, "the backend is up (every worker), nothing outstanding")
t.check(metric(s, "fairgate_queue_wait_limit_seconds") == 10, "queue wait limit exported in seconds")
t.check(metric(s, "fairgate_buffers_pool_size") > 0, "the buffer pool's size is exported")
bp = stat.get("backendPool") or [{}]
t.check(bp[0].get("address") == b and bp[0].get("state") == "up" and bp[0].get("outstandingSeats") == 0 and
        0 <= stat["workers"][0].get("busyRatio", -1) <= 1, f"status: the backend pool and the busy ratio ({bp})")
# Configuration changes: one refused, one published, as /metrics counts them.
ctl = [t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", "-"]
bad = subprocess.run(ctl, input="kind: FlowSchema\nmetadata: {name: x}\n", capture_output=True, text=True)
good = subprocess.run(ctl, input=t.level_config(qll=3), capture_output=True, text=True)  # not a no-op: published
t0 = time.time()
_, _, body2 = get(addr, "/metrics")
s2 = samples(body2)
t.check(bad.returncode != 0 and good.returncode == 0, f"a bad and a good apply ({bad.returncode}, {good.returncode})")
t.check(metric(s2, "fairgate_config_changes_total", result="failure") == 1 and
        metric(s2, "fairgate_config_changes_total", result="success") == 1, "config changes: 1 refused, 1 published")
t.check(abs(metric(s2, "fairgate_config_last_success_timestamp_seconds") - t0) < 30 and
        metric(s2, "fairgate_config_last_failure_timestamp_seconds") > 0, "the changes' times are recent Unix times")
st, hd, body = get(addr, "/metrics", method="HEAD")
t.check(st == 200 and body == "", "HEAD /metrics: headers only")

# 100 slow connections that never finish a request.
host, port = addr.rsplit(":", 1)
slow = []
for _ in range(100):
    try:
        s_ = socket.create_connection((host, int(port)), timeout=2)
        s_.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never the blank line
        slow.append(s_)
    except OSError:
        break
t.check(len(slow) == 100, f"100 slow connections opened ({len(slow)})")
t0 = time.time()
res = t.loadgen(d.addr, ["name=s,user=s,threads=2,service=1ms"], duration="1s", timeout="3s")
t.check(res["s"]["responses"] > 0 and res["s"]["lost"] == 0, "UDP requests served while HTTP clients stall")
ctl_t = time.time()
stat = d.status()
t.check(time.time() - ctl_t < 2 and stat["version"], "the control socket answers while HTTP clients stall")
# While they stall, from the same address, the probes and a scrape get in
# at once: the oldest stalled request is evicted for each (httpguard.h).
for path in ("/healthz", "/readyz", "/metrics"):
    t0 = time.time()
    st, _, _ = request(addr, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(), timeout=2)
    t.check(st == 200 and time.time() - t0 < 1, f"{path} answered at once while 100 connections stall ({st}, "
                                                  f"{time.time() - t0:.2f}s)")
for s_ in slow:
    s_.close()

# Draining: a slow request in flight, SIGTERM, a long grace: /readyz 503, /healthz 200.
lg = t.loadgen_start(d.addr, ["name=slow,user=slow,threads=1,service=4000ms"], duration="1s", timeout="15s")
d.wait_status(lambda x: t.level_of(x)["executing"] >= 1, timeout=5)
d.proc.send_signal(15)
deadline = time.time() + 5
st = None
while time.time() < deadline and st != 503:
    st, _, body = get(addr, "/readyz")
    time.sleep(0.05)
t.check(st == 503 and body.startswith("not ready: shutting down") and body.count("\n") == 1,
        f"/readyz 503 with a reason while draining ({st} {body!r})")
st, _, _ = get(addr, "/healthz")
t.check(st == 200, "/healthz still 200 while draining")
out, err = d.proc.communicate(timeout=30)
t.check(d.proc.returncode == 0, f"clean exit after the drain (rc={d.proc.returncode})")
t.check(re.search(r"http on 127\.0\.0\.1:\d+", err) is not None, "the bound HTTP address is on stderr")
r = t.loadgen_result(lg)
t.check(r["slow"]["responses"] >= 1, "the request in flight finished within the grace")

# --http off: no endpoint, and status says so.
d2 = t.Daemon([b], ["--http", "off"])
t.check(d2.http_address() == "off", "--http off: status says off")
d2.stop()
t.finish()
