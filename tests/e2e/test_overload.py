# SPDX-License-Identifier: Apache-2.0
"""More demand than seats: REJECT queue-full and time-out; what clients saw
matches fairgate's counters; nothing hangs, nothing leaks."""
import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=4)

# Short queue: queue-full.
d = t.Daemon([b], ["--seat-limit", "2", "--queue-wait", "10s"], level=dict(qll=2))  # a hand of 6 queues x 2
res = t.loadgen(d.addr, ["name=heavy,user=heavy,threads=30,service=20ms"], duration="2s", timeout="5s")
f = res["heavy"]
st = d.wait_idle()
c = st["counters"]
t.check(f["rejected"]["queue-full"] > 0, f"queue-full rejects seen by the client ({f['rejected']['queue-full']})")
t.check(f["lost"] == 0 and f["badAnswers"] == 0, "every request answered exactly once")
t.check(f["responses"] + f["rejectedTotal"] == f["sent"], "responses + rejects = sent")
t.check(c["rejected"]["queue-full"] == f["rejected"]["queue-full"], "fairgate's queue-full count = the client's")
t.check(c["responded"] == f["responses"], "fairgate's responded = the client's responses")
t.check(t.invariant_holds(st), "accounting invariant")
t.check(c["buffersInUse"] == 0, "no buffer leaked")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")

# Long queue, short wait limit: time-out.
d = t.Daemon([b], ["--seat-limit", "1", "--queue-wait", "100ms"], level=dict(qll=100))
res = t.loadgen(d.addr, ["name=heavy,user=heavy,threads=20,service=30ms"], duration="2s", timeout="5s")
f = res["heavy"]
st = d.wait_idle()
c = st["counters"]
t.check(f["rejected"]["time-out"] > 0, f"time-out rejects seen by the client ({f['rejected']['time-out']})")
t.check(c["rejected"]["time-out"] == f["rejected"]["time-out"], "fairgate's time-out count = the client's")
t.check(f["lost"] == 0 and f["responses"] + f["rejectedTotal"] == f["sent"], "nothing lost")
t.check(t.invariant_holds(st) and c["buffersInUse"] == 0, "invariant holds, no buffer leaked")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
