# SPDX-License-Identifier: Apache-2.0
"""Slow and odd HTTP clients cannot blind the operator (issue 26,
control/httpguard.h): 64 connections trickling one header byte every
second, from one address, and 200 idle ones from 200 loopback addresses,
while /healthz, /readyz and /metrics are asked every second and must each
answer within a second; a lone connection trickling a byte every 0.5 s is
shut by the request deadline (10 s), not kept for ever; 500 query
parameters and an over-long request line get a 4xx, never silence; what was
cut is counted in /metrics.  Every loop is bounded."""
import re
import socket
import time

import fgtest as t

DEADLINE_S = 10  # FG_HTTP_REQUEST_DEADLINE_NS (control/httpguard.h)


def request(addr, raw, source="127.0.0.1"):
    """(status or None, body, seconds) of one request on a new connection."""
    st, _, body, dt = t.http_raw(addr, raw, timeout=2.0 + PROBE_S, source=source)
    return st, body, dt


def get(addr, path, source="127.0.0.1"):
    return request(addr, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode(), source=source)


PROBE_S = 1 * t.SLOWDOWN  # Kubernetes' default probe timeout; 3 s in the sanitizer pass


def probes_answer(addr, what, source="127.0.0.1"):
    slow = []
    for path in ("/healthz", "/readyz", "/metrics"):
        st, _, dt = get(addr, path, source)
        if st != 200 or dt > PROBE_S:
            slow.append(f"{path}: {st} in {dt:.2f}s")
    t.check(not slow, f"{what}: /healthz, /readyz and /metrics each answered within {PROBE_S} s ({slow})")


def cut(addr):
    _, body, _ = get(addr, "/metrics")
    return {m.group(1): int(float(m.group(2)))
            for m in re.finditer(r'fairgate_http_connections_cut_total\{reason="([a-z-]+)"\} (\S+)', body)}


b = f"127.0.0.1:{t.free_port()}"
t.backend(b)
d = t.Daemon([b])
addr = d.http_address()
host, port = addr.rsplit(":", 1)

# --- 64 connections trickling a header byte every second, one address.
trickle = []
for _ in range(64):
    s = socket.create_connection((host, int(port)), timeout=2)
    s.sendall(b"G")
    trickle.append(s)
for second in range(4):
    time.sleep(1)
    for s in trickle:
        try:
            s.send(b"E")
        except OSError:
            pass
    probes_answer(addr, f"64 trickling connections from the probes' own address, second {second + 1}")
for s in trickle:
    s.close()

# --- 200 idle connections from 200 addresses (127.0.0.10 ... 127.0.0.209).
idle = []
for i in range(200):
    try:
        idle.append(socket.create_connection((host, int(port)), timeout=2, source_address=(f"127.0.0.{10 + i}", 0)))
    except OSError:
        break
t.check(len(idle) == 200, f"200 idle connections from 200 addresses opened ({len(idle)})")
probes_answer(addr, "200 idle connections from 200 addresses", source="127.0.0.250")
probes_answer(addr, "200 idle connections from 200 addresses, asked from one of theirs", source="127.0.0.10")
for s in idle:
    s.close()

# --- One connection alone, a byte every 0.5 s: the deadline ends it.
before = cut(addr).get("deadline", 0)
s = socket.create_connection((host, int(port)), timeout=2)
t0 = time.time()
closed_after = None
line = b"GET /healthz HTTP/1.1\r\nX-Slow: " + b"a" * 4000
for i in range(len(line)):
    try:
        s.send(line[i:i + 1])
        s.settimeout(0.5)
        if s.recv(1) == b"":
            closed_after = time.time() - t0
            break
    except socket.timeout:
        pass
    except OSError:
        closed_after = time.time() - t0
        break
    if time.time() - t0 > DEADLINE_S + 5:
        break
s.close()
t.check(closed_after is not None and DEADLINE_S - 1 <= closed_after <= DEADLINE_S + 2,
        f"a connection trickling a byte every 0.5 s is shut at the {DEADLINE_S} s request deadline "
        f"({closed_after if closed_after is None else round(closed_after, 1)} s)")
t.check(cut(addr).get("deadline", 0) == before + 1, "counted as reason=deadline in /metrics")

# --- Odd requests get a 4xx, never silence.
before = cut(addr).get("too-many-parameters", 0)
st, body, dt = get(addr, "/metrics?" + "&".join(f"p{i}=v" for i in range(500)))
t.check(st == 400 and "more than 64 query parameters" in body and dt < 2,
        f"500 query parameters: 400 with the reason ({st} {body.strip()!r}, {dt:.2f}s)")
st, body, _ = get(addr, "/debug/api_priority_and_fairness/dump_requests?" + "&".join(["a=1"] * 65))
t.check(st == 400, f"65 query parameters on a debug path: 400 ({st})")
st, body, _ = get(addr, "/metrics?" + "&".join(f"p{i}=v" for i in range(60)))
t.check(st == 400 and "unknown query parameter" in body, f"60 parameters are parsed and refused by name ({st} {body!r})")
t.check(cut(addr).get("too-many-parameters", 0) == before + 2, "counted as reason=too-many-parameters in /metrics")
st, _, dt = get(addr, "/healthz?" + "x" * 40000)
t.check(st is not None and 400 <= st < 500 and dt < 2, f"a 40 KB request line: 4xx ({st}, {dt:.2f}s)")
st, _, dt = request(addr, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X: " + b"y" * 40000 + b"\r\n\r\n")
t.check(st is not None and 400 <= st < 500 and dt < 2, f"a 40 KB header: 4xx ({st}, {dt:.2f}s)")
t.check(cut(addr).get("evicted", 0) > 0, f"evictions counted in /metrics ({cut(addr)})")
probes_answer(addr, "after all of it")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
