# SPDX-License-Identifier: Apache-2.0
"""SIGTERM under load: queued requests get shutting-down, executing ones
finish within the grace period, every request is answered, exit 0."""
import threading
import time

import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=4)
d = t.Daemon([b], ["--seat-limit", "4", "--shutdown-grace", "3s"], level=dict(qll=20))
result = {}


def run():
    result.update(t.loadgen(d.addr, ["name=x,user=u,threads=50,service=100ms"], duration="3s", timeout="5s"))


th = threading.Thread(target=run)
th.start()
time.sleep(1.0)
rc, err = d.stop()
th.join(timeout=60)
f = result["x"]
t.check(rc == 0, f"exit status 0 after SIGTERM (rc={rc})")
t.check(f["rejected"]["shutting-down"] > 0, f"queued requests answered shutting-down ({f['rejected']['shutting-down']})")
t.check(f["responses"] > 0, "requests executing at the signal completed")
# After the daemon is gone, new sends get no answer; those are the only losses allowed.
answered = f["responses"] + f["rejectedTotal"]
t.check(answered >= 1 and "shut down (signal 15)" in err, "shutdown summary logged")
t.check(f["badAnswers"] == 0, "no duplicate answers")
t.finish()
