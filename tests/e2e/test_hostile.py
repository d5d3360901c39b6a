# SPDX-License-Identifier: Apache-2.0
"""A hostile client against a socket-mode daemon on loopback: 100 000 junk
user names, identity claims from an untrusted source, address validation,
spoofed sources (reflection), forged backend answers, absurd widths.  Each
part checks what a daemon without the defence would get wrong."""
import os
import random
import socket
import struct
import sys
import time

import fgtest as t

rng = random.Random(1040)
DEADLINE = time.time() + 100  # the whole file: every wait below is bounded by this too


def exchange(sock, target, datagrams, window=128, timeout=10):
    """Send (id, bytes) pairs with at most `window` unanswered; returns
    {id: [answers]} for everything answered within the timeout."""
    answers, pending = {}, 0
    end = min(time.time() + timeout, DEADLINE)
    sock.settimeout(0.5)
    it = iter(datagrams)
    more = True
    while (more or pending) and time.time() < end:
        while more and pending < window:
            nxt = next(it, None)
            if nxt is None:
                more = False
                break
            sock.sendto(nxt[1], target)
            pending += 1
        try:
            data, _ = sock.recvfrom(65536)
        except socket.timeout:
            pending = 0  # half a second of silence: what is out is lost (and missing from the result)
            continue
        h = t.decode_header(data)
        if h:
            answers.setdefault(h["id"], []).append(data)
            pending -= 1
    return answers


def flows_by_name(st):
    return {f["flow"]: f for f in st["flows"]}


def client(ip="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)  # a window of answers never overflows it
    s.bind((ip, 0))
    s.settimeout(2)
    return s


def ask(sock, target, data, timeout=2):
    sock.settimeout(timeout)
    sock.sendto(data, target)
    try:
        return sock.recvfrom(65536)[0]
    except socket.timeout:
        return None


def cookie_of(answer):
    return next((v for k, v in t.parse_attrs(answer) if k == t.ATTR_COOKIE), None)


# --- 1. 100 000 junk user names: later tenants still get rows; a bad name is shown escaped
def junk_names():
    b = f"127.0.0.1:{t.free_port()}"
    t.backend(b, workers=4, extra=("--service-time", "0"))
    d = t.Daemon([b], ["--seat-limit", "64"])
    target = ("127.0.0.1", d.port)
    s = client()
    bad = b"bad\xff\xfe\x01name\\"
    got = exchange(s, target, [(1, t.request(1, user=bad))])
    t.check(len(got.get(1, [])) == 1, "a request with an invalid UTF-8 user name is answered")
    rows = flows_by_name(d.status())
    want = "everyone/bad\\xff\\xfe\\x01name\\x5c"
    t.check(rows.get(want, {}).get("received") == 1,
            f"the invalid UTF-8 user name is listed escaped ({want!r}; rows: {sorted(rows)[:5]})")

    n = 100000
    start = time.time()
    got = exchange(s, target, ((2 + i, t.request(2 + i, user=b"junk%06d" % i)) for i in range(n)), timeout=40)
    answered_once = sum(1 for i in range(n) if len(got.get(2 + i, [])) == 1)
    t.check(answered_once == n, f"{n} junk names each answered once ({answered_once}, {time.time() - start:.1f}s)")

    tenant = [(900000 + i, t.request(900000 + i, user=b"tenant-after-flood")) for i in range(50)]
    got = exchange(s, target, tenant)
    t.check(all(len(got.get(i, [])) == 1 for i, _ in tenant), "the new tenant's 50 requests answered")
    st = d.wait_idle()
    rows = flows_by_name(st)
    row = rows.get("everyone/tenant-after-flood", {})
    t.check(row.get("received", 0) >= 45,
            f"the new tenant has its own flow row after the flood (received {row.get('received')}, "
            f"{len(rows)} rows, flowsOverflow {st['counters']['flowsOverflow']})")
    t.check(st["counters"]["requestsReceived"] == n + 51 and t.invariant_holds(st),
            "every request counted in the totals, invariant holds")
    rc, _ = d.stop()
    t.check(rc == 0, "clean exit")


# --- 2. identity claims from an untrusted source are not believed
def identity_claims():
    b = f"127.0.0.1:{t.free_port()}"
    t.backend(b, workers=4)
    d = t.Daemon([b], ["--trusted-source", "127.0.0.1/32"])
    target = ("127.0.0.1", d.port)
    stranger = client("127.0.0.2")
    claim = t.req_attrs(user=b"admin", groups=[b"system:masters"])
    req = t.request(11, attrs=claim)
    ans = ask(stranger, target, req)
    h = ans and t.decode_header(ans)
    t.check(h and h["type"] == t.REJECT and h["reason"] == t.RETRY_WITH_COOKIE and len(ans) <= len(req),
            f"untrusted source: first answer is REJECT retry-with-cookie, not longer than the request "
            f"({h and h['reason']}, {ans and len(ans)} <= {len(req)})")
    cookie = cookie_of(ans) if ans else None
    t.check(cookie is not None and len(cookie) == 16, "the challenge carries a 16-byte cookie")
    bogus = t.request(12, attrs=t.req_attrs(user=b"admin", groups=[b"system:masters"], cookie=os.urandom(16)))
    ans = ask(stranger, target, bogus)
    h = ans and t.decode_header(ans)
    t.check(h and h["reason"] == t.RETRY_WITH_COOKIE, "a made-up cookie is challenged again")
    other = client("127.0.0.3")
    ans = ask(other, target, t.request(13, attrs=t.req_attrs(user=b"admin", groups=[b"system:masters"],
                                                             cookie=cookie or b"")))
    h = ans and t.decode_header(ans)
    t.check(h and h["reason"] == t.RETRY_WITH_COOKIE, "127.0.0.2's cookie does not pass from 127.0.0.3")
    ans = ask(stranger, target, t.request(14, attrs=t.req_attrs(user=b"admin", groups=[b"system:masters"],
                                                                cookie=cookie or b"")))
    h = ans and t.decode_header(ans)
    t.check(h and h["type"] == t.RESPONSE and h["id"] == 14, "with its cookie echoed, the stranger is served")
    st = d.wait_idle()
    lv = {lv["name"]: lv for lv in st["priorityLevels"]}
    t.check(lv["exempt"]["received"] == 0 and lv[t.TEST_LEVEL]["received"] == 1,
            f"the untrusted system:masters claim did not reach exempt (exempt {lv['exempt']['received']}, "
            f"{t.TEST_LEVEL} {lv[t.TEST_LEVEL]['received']})")
    t.check("everyone/system:anonymous" in flows_by_name(st), "it was classified as system:anonymous")

    ans = ask(client(), target, t.request(15, attrs=claim))
    h = ans and t.decode_header(ans)
    t.check(h and h["type"] == t.RESPONSE, "the same claim from trusted 127.0.0.1 is served without a cookie")
    st = d.wait_idle()
    lv = {lv["name"]: lv for lv in st["priorityLevels"]}
    t.check(lv["exempt"]["received"] == 1, "and lands in exempt (control: the claim itself works)")
    rc, _ = d.stop()
    t.check(rc == 0, "clean exit")


# --- 3. --address-validation all: the load generator proves its address and loses nothing
def address_validation_all():
    b = f"127.0.0.1:{t.free_port()}"
    t.backend(b, workers=4)
    d = t.Daemon([b], ["--address-validation", "all", "--seat-limit", "32"])
    res = t.loadgen(d.addr, ["name=a,user=ann,threads=4,service=1ms,count=300",
                             "name=b,user=bob,rate=400,service=1ms,count=300"], duration="5s", timeout="3s")
    for name, f in res.items():
        t.check(f["sent"] == 300 and f["responses"] == 300 and f["lost"] == 0 and f["rejectedTotal"] == 0,
                f"{name}: 300 sent, 300 answered, none lost ({f['responses']}, lost {f['lost']})")
        t.check(f["cookieRetries"] > 0, f"{name}: it was challenged and echoed the cookie ({f['cookieRetries']})")
    st = d.wait_idle()
    t.check(st["counters"]["requestsReceived"] == 600 and st["counters"]["responded"] == 600,
            "fairgate counted 600 requests, 600 responses")
    rc, _ = d.stop()
    t.check(rc == 0, "clean exit")


# --- 4. spoofed sources: no amplification, nothing reaches the backend
def reflection():
    backend = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    backend.bind(("127.0.0.1", 0))
    d = t.Daemon([f"127.0.0.1:{backend.getsockname()[1]}"], ["--trusted-source", "127.0.0.1/32"])
    victim = client("127.0.0.77")
    raw = t.raw_socket()
    sent = {}
    for i in range(300):
        kind = i % 5
        rid = 1000 + i
        if kind == 0:    # shorter than a cookie needs
            data = t.request(rid, attrs=t.attr(4, b"get"))
        elif kind == 1:  # just long enough
            data = t.request(rid, attrs=t.req_attrs(user=b"x"))
        elif kind == 2:  # a big payload to be relayed
            data = t.request(rid, attrs=t.req_attrs(user=b"victim"), payload=os.urandom(rng.randint(100, 4000)))
        elif kind == 3:  # a made-up cookie
            data = t.request(rid, attrs=t.req_attrs(user=b"x", cookie=os.urandom(16)))
        else:            # header-long garbage (REJECT invalid)
            data = t.request(rid, attrs=struct.pack(">HH", 1, 60000))
        sent[rid] = len(data)
        t.send_spoofed(raw, victim.getsockname(), ("127.0.0.1", d.port), data)
        if i % 50 == 49:
            time.sleep(0.01)
    got, bytes_in, bad = 0, 0, []
    victim.settimeout(0.5)
    while time.time() < DEADLINE:
        try:
            data, _ = victim.recvfrom(65536)
        except socket.timeout:
            break
        h = t.decode_header(data)
        got += 1
        bytes_in += len(data)
        if not h or h["type"] != t.REJECT or h["reason"] not in (t.RETRY_WITH_COOKIE, 4) or \
                len(data) > sent.get(h["id"], 0):
            bad.append((h, len(data)))
    t.check(not bad, f"the victim got only REJECTs (retry-with-cookie or invalid) no longer than each request "
                     f"({len(bad)} others: {bad[:3]})")
    total = sum(sent.values())
    t.check(bytes_in <= total, f"amplification <= 1: {bytes_in} bytes to the victim for {total} sent")
    t.check(got > 0, f"challenges were sent ({got}): the spoofed datagrams did arrive")
    backend.settimeout(0.2)
    try:
        leaked = backend.recvfrom(65536)
    except socket.timeout:
        leaked = None
    t.check(leaked is None, "the backend received nothing")
    c = d.status()["counters"]
    t.check(c["dispatched"] == 0 and c["requestsReceived"] == 0, "nothing admitted or dispatched")
    rc, _ = d.stop()
    t.check(rc == 0, "clean exit")


# --- 5. forged answers from the backend's address with guessed dispatch ids
def forged_answers():
    bport = t.free_port()
    t.backend(f"127.0.0.1:{bport}", workers=4)
    d = t.Daemon([f"127.0.0.1:{bport}"])
    target = ("127.0.0.1", d.port)
    c = client()
    c.sendto(t.request(77, payload=t.service(2500000)), target)  # held 2.5 s at the backend
    st = d.wait_status(lambda st: st["counters"]["dispatched"] == 1)
    t.check(st["counters"]["dispatched"] == 1, "the real request is at the backend")
    ids = [s << 32 | n for s in range(16) for n in range(16)]      # small nonces (predictable ids)
    ids += [n << 32 | s for s in range(16) for n in range(16)]     # (generation, slot) layouts
    ids += [(i % 64) << 32 | rng.getrandbits(32) for i in range(5000 - len(ids))]
    raw = t.raw_socket()
    src, dst = ("127.0.0.1", bport), target
    for i, did in enumerate(ids):
        forged = struct.pack(t.HDR, 0x4647, 1, t.RESPONSE, 0, 40, did, 0, 0, 0, 0, 0, 0, 0, 0) + b"FORGED"
        t.send_spoofed(raw, src, dst, forged)
        if i % 100 == 99:
            time.sleep(0.005)
    # The real answer is still 2 s away: nothing may have been relayed yet.
    st = d.wait_status(lambda st: st["counters"]["responsesUnmatched"] >= len(ids), timeout=1.5)
    t.check(st["counters"]["responsesUnmatched"] == len(ids) and st["counters"]["responded"] == 0,
            f"while the request executes: {len(ids)} forgeries unmatched "
            f"({st['counters']['responsesUnmatched']}), none relayed ({st['counters']['responded']})")
    answers = []
    c.settimeout(0.5)
    end = min(time.time() + 6, DEADLINE)
    while time.time() < end:
        try:
            answers.append(c.recvfrom(65536)[0])
        except socket.timeout:
            if answers:
                break
    hs = [t.decode_header(a) for a in answers]
    t.check(len(answers) == 1 and hs[0]["type"] == t.RESPONSE and hs[0]["id"] == 77 and b"FORGED" not in answers[0],
            f"the client got exactly the real answer ({len(answers)} answers)")
    st = d.wait_idle()
    t.check(st["counters"]["responsesUnmatched"] == len(ids) and st["counters"]["responded"] == 1,
            f"after it: still {len(ids)} unmatched ({st['counters']['responsesUnmatched']}), one response")
    rc, _ = d.stop()
    t.check(rc == 0, "clean exit")


# --- 6. absurd widths: capped, seats back within maxExtraLatency, others served
WIDTH_CONFIG = t.level_config().replace('group: {name: "*"}', 'group: {name: "tenants"}')


def hostile_widths():
    b = f"127.0.0.1:{t.free_port()}"
    t.backend(b, workers=8)
    d = t.Daemon([b], ["--seat-limit", "40", "--max-extra-latency", "200ms"], config=WIDTH_CONFIG)
    target = ("127.0.0.1", d.port)
    s = client()
    hostile = []
    for rid, groups, verb in [(1, [b"tenants"], b"list"), (2, [b"tenants"], b"create"),
                              (3, [b"system:authenticated"], b"list"), (4, [b"system:authenticated"], b"create")]:
        a = t.req_attrs(user=b"mallory", groups=groups, verb=verb)
        hostile.append(t.request(rid, attrs=a, seats=65535, final_seats=65535, work=0xffffffff,
                                 extra_us=0xffffffff, payload=t.service(1000000)))
    for h in hostile:
        s.sendto(h, target)
    res = t.loadgen(d.addr, ["name=t,user=tenant,groups=tenants,threads=4,service=1ms,count=200"],
                    duration="5s", timeout="3s")["t"]
    t.check(res["responses"] == 200 and res["lost"] == 0 and res["rejectedTotal"] == 0 and
            res["latencyP99Ms"] < 500,
            f"another tenant is served meanwhile (200 answered, p99 {res['latencyP99Ms']} ms < 500)")
    answers, last = {}, time.time()
    s.settimeout(0.5)
    end = min(DEADLINE, time.time() + 8)
    while len(answers) < 4 and time.time() < end:
        try:
            data = s.recvfrom(65536)[0]
        except socket.timeout:
            continue
        answers[t.decode_header(data)["id"]] = t.decode_header(data)
        last = time.time()
    t.check(len(answers) == 4, f"all four hostile requests answered ({sorted(answers)})")
    t.check(all(answers[i]["type"] == t.RESPONSE for i in (1, 2) if i in answers),
            "the two on the queued level were served")
    st = d.wait_status(lambda st: all(lv["seatsInUse"] == 0 for lv in st["priorityLevels"]), timeout=3)
    took = time.time() - last
    lv = {lv["name"]: lv for lv in st["priorityLevels"]}
    t.check(lv[t.TEST_LEVEL]["received"] >= 202 and lv["catch-all"]["received"] == 2,
            "the hostile requests reached the queued level and the catch-all")
    t.check(all(lv["seatsInUse"] == 0 for lv in st["priorityLevels"]) and took < 1.0,
            f"every level's seats back to 0 within maxExtraLatency + margin ({took:.2f}s < 1.0)")
    rc, _ = d.stop()
    t.check(rc == 0, "clean exit")


PARTS = (junk_names, identity_claims, address_validation_all, reflection, forged_answers, hostile_widths)
chosen = [p for p in PARTS if p.__name__ in sys.argv[1:]] or PARTS  # e.g. `test_hostile.py reflection`
try:
    for part in chosen:
        print(f"== {part.__name__}", flush=True)
        begun = time.time()
        part()
        t.cleanup()
        print(f"   ({time.time() - begun:.1f}s)", flush=True)
finally:
    t.cleanup()
t.finish()
