# SPDX-License-Identifier: Apache-2.0
"""Garbage datagrams at the daemon: random bytes, truncated headers, lying
length fields, huge attribute counts, oversized datagrams.  It keeps
serving; counters show them; header-long ones get REJECT invalid."""
import random
import struct

import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=4)
d = t.Daemon([b], ["--seat-limit", "4"])
target = ("127.0.0.1", d.port)
s = t.udp_client()
rng = random.Random(1040)

sent = 0
for _ in range(300):  # random bytes, mostly without the magic: dropped silently
    s.sendto(bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 200))), target)
    sent += 1
for n in range(0, 40):  # truncated headers
    s.sendto(t.request(1)[:n], target)
    sent += 1
lying = bytearray(t.request(2))
lying[6:8] = struct.pack(">H", 4000)  # header length past the datagram
s.sendto(bytes(lying), target)
lying_attr = t.request(3, attrs=struct.pack(">HH", 1, 60000) + b"x")  # attribute length lies
s.sendto(lying_attr, target)
many = t.request(4, attrs=b"".join(t.attr(2, b"g") for _ in range(257)))  # one group past the limit
s.sendto(many, target)
unknown_attrs = t.request(5, attrs=b"".join(t.attr(0x100, b"") for _ in range(400)))  # past 320 attributes
s.sendto(unknown_attrs, target)
s.sendto(t.request(6) + b"x" * 9000, target)  # over the datagram limit
sent += 5

invalid_ids = set()
for _ in range(4):
    try:
        data, _ = s.recvfrom(65536)
    except OSError:
        break
    h = t.decode_header(data)
    if h and h["type"] == 3 and h["reason"] == 4:
        invalid_ids.add(h["id"])
t.check(invalid_ids == {2, 3, 4, 5}, f"REJECT invalid for the header-long malformed ones (got {sorted(invalid_ids)})")

# Still serving.
s.sendto(t.request(77, payload=b"FGSV\x00\x00\x03\xe8"), target)
data, _ = s.recvfrom(65536)
h = t.decode_header(data)
t.check(h is not None and h["type"] == 2 and h["id"] == 77, "a valid request still gets its response")
st = d.status()
c = st["counters"]
t.check(c["malformed"] >= 345, f"malformed datagrams counted ({c['malformed']})")
t.check(c["invalidRejected"] == 4, f"4 REJECT invalid sent ({c['invalidRejected']})")
t.check("datagram longer than the protocol limit" in c["malformedByReason"], "oversized datagram counted by reason")
t.check(c["requestsReceived"] == 1 and c["responded"] == 1, "only the valid request counted as a request")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
