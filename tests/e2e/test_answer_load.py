# SPDX-License-Identifier: Apache-2.0
"""The LOAD attribute on answers (issue 29, answerLoad; protocol.md): off
by default; with `all` every answer carries it first among its attributes
(the backend's attributes and payload unchanged after it): the level's load
and the instance's in thousandths and the level's estimated wait, idle 0,
under a flood above 1000 with a wait; a REJECT fairgate makes carries it
only where it stays no longer than the request it answers; `trusted` gives
it to trusted sources only.  A backend's own LOAD attribute never reaches
the client as fairgate's (blanked to padding); an answer with no room left
(8192 bytes, or already 320 attributes) goes without, counted, and still
decodes."""
import re
import socket
import struct
import subprocess
import tempfile
import threading
import time

import fgtest as t

ATTR_LOAD = 11
RESPONSE, REJECT = 2, 3

b0 = f"127.0.0.1:{t.free_port()}"
p0 = t.backend(b0, workers=8)
d = t.Daemon([b0 + ",seats=2"], ["--seat-limit", "2", "--address-validation", "off"])
host, port = d.addr.split(":")
cli = t.udp_client()
next_id = [100]


def ask(attrs=None, payload=b"", timeout=3.0):
    """One request; its answer (header, [(type, value)], payload)."""
    next_id[0] += 1
    cli.settimeout(timeout)
    cli.sendto(t.request(next_id[0], attrs=attrs, payload=payload), (host, int(port)))
    while True:
        data, _ = cli.recvfrom(65536)
        h = t.decode_header(data)
        if h and h["id"] == next_id[0]:
            return h, t.parse_attrs(data), data[h["hdr_len"]:]


def load_of(attrs):
    """The first LOAD attribute's (level, instance, wait_us), or None."""
    for typ, v in attrs:
        if typ == ATTR_LOAD:
            t.check(len(v) == 8, f"LOAD is 8 bytes ({len(v)})")
            return struct.unpack(">HHI", v)
    return None


def apply_settings(spec):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: %s\n" % spec)
    p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True, text=True,
                       timeout=10)
    t.check(p.returncode == 0, f"apply {spec}: {p.stderr.strip()}")


payload = t.service(1000) + b"-body"
h, attrs, body = ask(payload=payload)
t.check(h["type"] == RESPONSE and load_of(attrs) is None, "off by default: no LOAD attribute")

apply_settings("{answerLoad: all}")
time.sleep(0.3)  # published every 100 ms
h, attrs, body = ask(payload=payload)
t.check(h["type"] == RESPONSE and attrs and attrs[0][0] == ATTR_LOAD, f"answerLoad all: LOAD first ({attrs})")
t.check(body == payload, "the payload after it unchanged")
idle = load_of(attrs)
t.check(idle is not None and idle[0] <= 1000 and idle[2] == 0, f"idle: the level not above full, no wait ({idle})")

# A flood of 20 ms requests against 2 seats: the level is loaded, a wait estimated.
lg = t.loadgen_start(d.addr, ["name=flood,user=flood,threads=20,service=20ms"], duration="4s", timeout="10s")
time.sleep(1.5)
busy = None
for _ in range(20):
    h, attrs, _ = ask(payload=t.service(1000), timeout=10)
    busy = load_of(attrs)
    if h["type"] == RESPONSE and busy and busy[0] > 1000 and busy[2] > 0:
        break
t.check(busy is not None and busy[0] > 1000 and busy[1] > 1000 and busy[2] > 0,
        f"a flood: the level's and the instance's load above 1000, a wait estimated ({busy})")

# fairgate's own REJECTs (time-out after 1 ms in the queue): with LOAD when
# the request is long enough, without when it would be longer than the request.
apply_settings("{answerLoad: all, queueWaitLimit: 1ms}")
time.sleep(0.2)
long_attrs = t.req_attrs(user=b"probe-long", pad=20)
short_attrs = t.attr(1, b"a") + t.attr(4, b"g")  # 40 + 5 + 5 = 50 bytes: a REJECT with LOAD is 52
saw_long = saw_short = None
for _ in range(40):
    h, attrs, _ = ask(attrs=long_attrs, timeout=10)
    if h["type"] == REJECT:
        saw_long = load_of(attrs)
        break
for _ in range(40):
    h, attrs, _ = ask(attrs=short_attrs, timeout=10)
    if h["type"] == REJECT:
        saw_short = attrs
        break
t.check(saw_long is not None, f"a REJECT fairgate makes carries LOAD ({saw_long})")
t.check(saw_short is not None and load_of(saw_short) is None,
        "a REJECT that would be longer than its request goes without")
res = t.loadgen_result(lg)
t.check(res["flood"]["lost"] == 0, "every flood request answered")
apply_settings("{queueWaitLimit: 15s}")

# trusted: only trusted sources get it (loopback is trusted by default).
apply_settings("{answerLoad: trusted, trustedSources: [10.0.0.0/8]}")
time.sleep(0.2)
h, attrs, _ = ask(payload=t.service(1000))
t.check(h["type"] == RESPONSE and load_of(attrs) is None, "trusted: an untrusted source gets none")
apply_settings("{answerLoad: trusted, trustedSources: [127.0.0.1/32]}")
time.sleep(0.2)
h, attrs, _ = ask(payload=t.service(1000))
t.check(h["type"] == RESPONSE and load_of(attrs) is not None, "trusted: a trusted source gets it")

# A hostile backend: its own LOAD, answers at the size limit, answers with
# the most attributes a message may carry.
fake = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
fake.bind(("127.0.0.1", 0))
fake.settimeout(0.2)
stop = threading.Event()


def fake_backend():
    while not stop.is_set():
        try:
            data, peer = fake.recvfrom(65536)
        except socket.timeout:
            continue
        h = t.decode_header(data)
        body = data[h["hdr_len"]:]
        if body.startswith(b"LOAD"):
            attrs = t.attr(ATTR_LOAD, struct.pack(">HHI", 777, 888, 999)) + t.attr(1, b"kept")
            out = body
        elif body.startswith(b"BIG"):
            attrs = t.attr(ATTR_LOAD, struct.pack(">HHI", 777, 888, 999))
            out = b"x" * (8192 - 40 - len(attrs))
        else:  # MANY: 320 attributes, the most a message may carry
            attrs = b"".join(t.attr(0x7000, b"a") for _ in range(320))
            out = body
        hdr = struct.pack(t.HDR, 0x4647, 1, RESPONSE, 0, 40 + len(attrs), h["id"], 0, 0, 0, 0, 0, 0, 0, 0)
        fake.sendto(hdr + attrs + out, peer)


threading.Thread(target=fake_backend, daemon=True).start()
d2 = t.Daemon([f"127.0.0.1:{fake.getsockname()[1]}"], ["--answer-load", "all", "--address-validation", "off"])
host, port = d2.addr.split(":")
time.sleep(0.3)
h, attrs, body = ask(payload=b"LOAD-body")
t.check(h["type"] == RESPONSE and load_of(attrs) is not None and load_of(attrs)[0] != 777,
        f"a backend's own LOAD does not reach the client as fairgate's ({load_of(attrs)})")
t.check([a for a in attrs if a[0] == ATTR_LOAD] == attrs[:1] and (1, b"kept") in attrs and body == b"LOAD-body",
        "the backend's LOAD blanked, its other attributes and payload kept")
h, attrs, body = ask(payload=b"BIG")
t.check(h["type"] == RESPONSE and len(body) + h["hdr_len"] == 8192 and load_of(attrs) is None,
        f"an 8192-byte answer goes without, the backend's LOAD blanked ({load_of(attrs)})")
h, attrs, body = ask(payload=b"MANY")
t.check(h["type"] == RESPONSE and len(attrs) == 320 and load_of(attrs) is None,
        f"an answer with 320 attributes goes without, still decodable ({len(attrs)})")
st2 = d2.status()
t.check(st2["counters"]["answersWithoutLoad"] == 2, f"both counted ({st2['counters']['answersWithoutLoad']})")
stop.set()
t.check(t.invariant_holds(d2.wait_idle()), "invariant holds with the hostile backend")
t.check(d2.stop()[0] == 0, "clean exit with the hostile backend")
host, port = d.addr.split(":")

st = d.status()
t.check("answersWithoutLoad" in st["counters"], "status counts answers without room for it")
_, metrics = t.http_get(f"http://{d.http_address()}/metrics")
t.check(re.search(r"^fairgate_answers_without_load_total \d+$", metrics, re.M) is not None,
        "fairgate_answers_without_load_total in /metrics")
t.end(d)
