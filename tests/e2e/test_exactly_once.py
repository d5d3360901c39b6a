# SPDX-License-Identifier: Apache-2.0
"""N requests from several clients through fairgate to two backends: N
responses, each exactly once, and fairgate's counters agree; then the same
with backends whose capacity is below the seat limit."""
import fgtest as t

b1, b2 = f"127.0.0.1:{t.free_port()}", f"127.0.0.1:{t.free_port()}"
t.backend(b1, workers=8)
t.backend(b2, workers=8)
d = t.Daemon([b1, b2], ["--seat-limit", "16"])
flows = [f"name=c{i},user=user{i},threads={2 + i},service=1ms,count=400" for i in range(4)]
res = t.loadgen(d.addr, flows, duration="30s", timeout="5s")
for name, f in res.items():
    t.check(f["sent"] == 400 and f["responses"] == 400, f"{name}: 400 sent, 400 responses (got {f['responses']})")
    t.check(f["lost"] == 0 and f["rejectedTotal"] == 0 and f["badAnswers"] == 0,
            f"{name}: nothing lost, rejected or duplicated")
st = d.wait_idle()
c = st["counters"]
t.check(c["requestsReceived"] == 1600 and c["responded"] == 1600, "fairgate counted 1600 received, 1600 responded")
t.check(c["responsesUnmatched"] == 0 and c["malformed"] == 0, "no unmatched responses, no malformed datagrams")
t.check(t.invariant_holds(st), "received = responded + rejected + waiting + executing")
t.check(st["counters"]["buffersInUse"] == 0, "every buffer returned to the pool")
flows_seen = {f["flow"]: f for f in st["flows"]}
t.check(all(flows_seen.get(f"everyone/user{i}", {}).get("responded") == 400 for i in range(4)),
        "per-flow counters (schema/distinguisher): 400 each")
rc, err = d.stop()
t.check(rc == 0, f"clean exit on SIGTERM (rc={rc})")

# Backends with a capacity of 2 seats each under 16 seats: admitted requests
# wait for room at fairgate and are still answered exactly once.
d = t.Daemon([b1 + ",seats=2", b2 + ",seats=2"], ["--seat-limit", "16"])
flows = [f"name=k{i},user=user{i},threads=4,service=5ms,count=100" for i in range(4)]
res = t.loadgen(d.addr, flows, duration="30s", timeout="5s")
t.check(all(f["responses"] == 100 and f["lost"] == 0 and f["rejectedTotal"] == 0 for f in res.values()),
        f"capacities: 4 x 100 answered, nothing lost or rejected ({[f['responses'] for f in res.values()]})")
st = d.wait_idle()
t.check(st["counters"]["heldForBackend"] > 0 and st["counters"]["responded"] == 400,
        f"requests waited for backend room ({st['counters']['heldForBackend']} held), 400 responded")
t.check(t.invariant_holds(st) and st["counters"]["buffersInUse"] == 0, "invariant holds, buffers back")
rc, err = d.stop()
t.check(rc == 0, f"clean exit on SIGTERM (rc={rc})")
t.finish()
