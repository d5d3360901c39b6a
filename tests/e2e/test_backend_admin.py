# SPDX-License-Identifier: Apache-2.0
"""Backends changed live under load: drain (no new dispatches, in-flight
ones finish), disable, enable, add and remove through `fairgatectl backend`,
while a load generator runs; every request is answered exactly once and
none is rejected (a usable backend is there throughout).  Then the hostile
side: unknown and malformed addresses, and a peer outside controlAdmins
(who may still read the backends in status)."""
import os
import subprocess
import time

import ctltest
import fgtest as t

b1, b2, b3 = (f"127.0.0.1:{t.free_port()}" for _ in range(3))
for b in (b1, b2, b3):
    t.backend(b, workers=16)
d = t.Daemon([b1, b2], ["--seat-limit", "16", "--backend-timeout", "5s"])


def ctl(*args):
    return subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "backend"] + list(args), capture_output=True,
                          text=True, timeout=10)


def pool(st=None):
    st = st or d.status()
    return {b["address"]: b for b in st["backendPool"]}


def must(*args):
    p = ctl(*args)
    t.check(p.returncode == 0, f"backend {' '.join(args)}: exit 0 ({p.stderr.strip()})")


# 4 flows of 20 ms requests, 16 in flight: ~800 requests/s for 6 s.
flows = [f"name=f{i},user=u{i},threads=4,service=20ms,count=1200" for i in range(4)]
lg = t.loadgen_start(d.addr, flows, duration="30s", timeout="10s")
time.sleep(0.8)
t.check(all(pool()[b]["dispatched"] > 0 for b in (b1, b2)), "both backends take requests")

# Drain b1: its in-flight requests finish, nothing new goes there.
must("drain", b1)
st = d.wait_status(lambda s: pool(s)[b1]["admin"] == "drained")
t.check(pool(st)[b1]["admin"] == "drained" and pool(st)[b1]["outstandingSeats"] == 0,
        f"b1 drained: nothing in flight there ({pool(st)[b1]})")
n1 = pool(st)[b1]["dispatched"]
time.sleep(0.5)
st = d.status()
t.check(pool(st)[b1]["dispatched"] == n1 and pool(st)[b2]["outstandingSeats"] > 0,
        f"no new dispatch to a drained backend ({n1} -> {pool(st)[b1]['dispatched']}); b2 takes the load")
t.check(st["backends"] == 2, "status counts 2 backends")

# Add b3, disable b2: everything goes to b3.
must("add", b3 + ",seats=16")
must("disable", b2)
st = d.wait_status(lambda s: pool(s)[b2]["outstandingSeats"] == 0)
n2, n3 = pool(st)[b2]["dispatched"], pool(st)[b3]["dispatched"]
time.sleep(0.5)
st = d.status()
p = pool(st)
t.check(p[b2]["admin"] == "disabled" and p[b2]["dispatched"] == n2, f"disabled b2 gets nothing new ({p[b2]})")
t.check(p[b3]["dispatched"] > n3 and p[b3]["capacitySeats"] == 16, f"added b3 takes the load ({p[b3]})")

# Enable both again, then remove b3 while requests are in flight there:
# they are answered by b3 (its slot stays until they are).
must("enable", b1)
must("enable", b2)
st = d.wait_status(lambda s: pool(s)[b3]["outstandingSeats"] > 0)
t.check(pool(st)[b3]["outstandingSeats"] > 0, "requests in flight at b3")
must("remove", b3)
st = d.status()
t.check(st["backends"] == 2, f"status counts 2 backends after the removal ({st['backends']})")
t.check(b3 not in pool(st) or pool(st)[b3]["admin"] == "removed", "b3 removed (listed only while answers are due)")
n1 = pool(st)[b1]["dispatched"]
time.sleep(0.5)
st = d.status()
t.check(pool(st)[b1]["dispatched"] > n1 and b3 not in pool(st), "b1 takes requests again; b3 is gone")

res = t.loadgen_result(lg)
for name, f in res.items():
    answered = f["responses"] + f["rejectedTotal"]
    t.check(f["lost"] == 0 and f["badAnswers"] == 0 and answered == f["sent"],
            f"{name}: every request answered exactly once ({f['sent']} sent, {f['responses']} responses, "
            f"{f['rejectedTotal']} rejected, {f['lost']} lost, {f['badAnswers']} bad)")
    t.check(f["rejectedTotal"] == 0, f"{name}: nothing rejected ({f['rejected']})")
st = d.wait_idle()
c = st["counters"]
t.check(c["responsesUnmatched"] == 0 and t.invariant_holds(st) and c["buffersInUse"] == 0,
        f"no unmatched answers ({c['responsesUnmatched']}), invariant holds, buffers back")

# Hostile input: an unknown backend, a bad address, an over-long one.
p = ctl("drain", "127.0.0.1:1")
t.check(p.returncode == 1 and "no backend 127.0.0.1:1" in p.stderr, f"unknown backend named ({p.stderr.strip()})")
p = ctl("drain", "not-an-address")
t.check(p.returncode == 1 and "bad backend address" in p.stderr, f"bad address refused ({p.stderr.strip()})")
p = ctl("drain", "1" * 200)
t.check(p.returncode == 2, "an over-long address is a usage error")
p = ctl("add", b1)
t.check(p.returncode == 1 and "already listed" in p.stderr, f"a duplicate add refused ({p.stderr.strip()})")
p = ctl("frobnicate", b1)
t.check(p.returncode == 2, "an unknown action is a usage error")

# Only controlAdmins change backends; anyone who connects reads them.
if os.geteuid() == 0:
    os.chmod(d.sock, 0o666)
    peer = ctltest.Peer(d.sock)
    a = peer.do(req={"command": "backend", "action": "drain", "address": b1})["answer"]
    t.check(a and not a["ok"] and "permission denied" in a["error"], f"a non-admin cannot drain ({a})")
    a = peer.do(req={"command": "status"})["answer"]
    t.check(a and a["ok"] and len(a["result"]["backendPool"]) == 2, "a non-admin reads the backends in status")
    peer.close()
    t.check(pool()[b1]["admin"] == "enabled", "b1 still enabled")

p = ctl("list")
t.check(p.returncode == 0 and b1 in p.stdout and "enabled" in p.stdout, "backend list prints the table")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
