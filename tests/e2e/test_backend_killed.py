# SPDX-License-Identifier: Apache-2.0
"""A backend killed mid-run: backend-timeout answers until it is ejected
(3 timeouts in a row), then fast no-backend answers while none is usable;
seats are released; once it returns on the same address the next request
probes it and traffic flows again."""
import time

import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
bp = t.backend(b, workers=8)
d = t.Daemon([b], ["--seat-limit", "8", "--backend-timeout", "500ms"])
res = t.loadgen(d.addr, ["name=warm,user=u,threads=4,service=5ms,count=100"], duration="10s")
t.check(res["warm"]["responses"] == 100, "requests succeed while the backend is up")

# Requests in flight when the backend dies.
bp.kill()
bp.wait()
res = t.loadgen(d.addr, ["name=dead,user=u,threads=1,service=5ms,count=20"], duration="10s", timeout="5s")
f = res["dead"]
t.check(f["rejected"]["backend-timeout"] == 3 and f["rejected"]["no-backend"] == 17,
        f"3 backend-timeouts, then the backend is ejected and 17 get no-backend at once "
        f"({f['rejected']['backend-timeout']}, {f['rejected']['no-backend']})")
t.check(f["lost"] == 0, "no request left unanswered")
st = d.wait_idle()
lv = t.level_of(st)
t.check(lv["seatsInUse"] == 0 and lv["executing"] == 0, "seats released after the timeouts")
t.check(st["counters"]["rejected"]["backend-timeout"] == 3 and st["counters"]["backendEjections"] == 1,
        "fairgate counted 3 backend-timeouts and 1 ejection")

# The backend comes back on the same address; after the ejection time (1s)
# the next request probes it and brings it back.
t.backend(b, workers=8)
time.sleep(1.2)
res = t.loadgen(d.addr, ["name=back,user=u,threads=1,service=5ms,count=100"], duration="10s")
t.check(res["back"]["responses"] == 100, f"requests succeed again ({res['back']['responses']}/100)")
st = d.wait_idle()
t.check(t.invariant_holds(st) and st["counters"]["buffersInUse"] == 0, "invariant holds, no buffer leaked")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
