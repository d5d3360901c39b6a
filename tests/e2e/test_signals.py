# SPDX-License-Identifier: Apache-2.0
"""Signals (issue 17): SIGHUP re-applies the --config file as a live apply
would (reloadable settings and objects take effect; an invalid file or a
restart-only change is refused with its errors and nothing changes; without
--config it says there is nothing to reload); a second SIGTERM during the
drain ends it at once and every request still gets exactly one answer;
SIGQUIT stops the daemon as SIGTERM does."""
import os
import signal
import subprocess
import threading
import time

import fgtest as t

SETTINGS = "apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {{serverConcurrencyLimit: {limit}}}\n---\n"


def config(limit, queues):
    return SETTINGS.format(limit=limit) + t.level_config(queues=queues)


def stop(d, timeout=20):
    """SIGTERM and the daemon's exit status and stderr."""
    rc, err = d.stop(timeout=timeout)
    return rc, err or ""


def wait_exit(d, timeout):
    """The daemon's stderr once it exits (killed after timeout)."""
    try:
        return d.proc.communicate(timeout=timeout)[1]
    except subprocess.TimeoutExpired:
        d.proc.kill()
        return d.proc.communicate()[1]


b = f"127.0.0.1:{t.free_port()}"
t.backend(b)

# --- SIGHUP ----------------------------------------------------------------
d = t.Daemon([b], config=config(9, 64))
st = d.status()
t.check(st["serverConcurrencyLimit"] == 9 and t.level_of(st)["queues"] == 64, "started with the file's settings")
gen = st["configGeneration"]
with open(d.config_path, "w") as f:
    f.write(config(11, 32))
d.proc.send_signal(signal.SIGHUP)
st = d.wait_status(lambda st: st["serverConcurrencyLimit"] == 11 and t.level_of(st)["queues"] == 32)
t.check(st["serverConcurrencyLimit"] == 11 and t.level_of(st)["seatLimit"] == 11 and t.level_of(st)["queues"] == 32
        and st["configGeneration"] == gen + 1, "SIGHUP: the file's new server limit and queues are in force")
# An invalid file: refused with its errors, nothing changed, still serving.
with open(d.config_path, "w") as f:
    f.write(SETTINGS.format(limit=13) + t.level_config(queues=512, hand=8))
d.proc.send_signal(signal.SIGHUP)
time.sleep(1)
st = d.status()
t.check(d.proc.poll() is None and st["serverConcurrencyLimit"] == 11 and t.level_of(st)["queues"] == 32
        and st["configGeneration"] == gen + 1, "SIGHUP with an invalid file: the daemon runs on, nothing changed")
# A restart-only setting: refused as a live apply refuses it.
with open(d.config_path, "w") as f:
    f.write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {listen: 127.0.0.1:1, "
            "serverConcurrencyLimit: 14}\n")
d.proc.send_signal(signal.SIGHUP)
time.sleep(1)
st = d.status()
t.check(d.proc.poll() is None and st["serverConcurrencyLimit"] == 11 and st["configGeneration"] == gen + 1,
        "SIGHUP with a restart-only change: refused, nothing changed")
r = t.loadgen(d.addr, ["name=after,user=z,threads=2,service=1ms,count=20"], duration="10s")
t.check(r["after"]["responses"] == 20, "serving after the reloads")
rc, err = stop(d)
t.check(rc == 0 and "SIGHUP: reloaded 1 --config file(s)" in err and "(configuration generation 2)" in err,
        "the reload is logged with its generation")
t.check("invalid configuration, 1 error(s); nothing was changed" in err and "required entropy bits" in err,
        "the invalid file's errors are logged")
t.check("spec.listen: cannot change while fairgate runs (restart it)" in err, "the restart-only field is named")

# Without --config there is nothing to reload: said, and the daemon runs on.
d = t.Daemon([b], config=None)
d.proc.send_signal(signal.SIGHUP)
time.sleep(0.5)
t.check(d.proc.poll() is None and d.status()["configGeneration"] == 1, "SIGHUP without --config: still running")
rc, err = stop(d)
t.check(rc == 0 and "SIGHUP: no --config file to reload" in err, "SIGHUP without --config: logged")

# --- a second SIGTERM ends the drain ------------------------------------------------
slow = f"127.0.0.1:{t.free_port()}"
t.backend(slow, workers=4)
d = t.Daemon([slow], ["--seat-limit", "4", "--shutdown-grace", "60s"])
result = {}
th = threading.Thread(target=lambda: result.update(
    t.loadgen(d.addr, ["name=x,user=u,threads=8,service=30s,count=8"], duration="60s", timeout="40s")))
th.start()
st = d.wait_status(lambda st: t.level_of(st)["executing"] == 4 and t.level_of(st)["waiting"] == 4, timeout=10)
t.check(t.level_of(st)["executing"] == 4 and t.level_of(st)["waiting"] == 4, "4 requests executing (30 s each), 4 waiting")
d.proc.send_signal(signal.SIGTERM)
time.sleep(1.5)
t.check(d.proc.poll() is None, "after the first SIGTERM the drain waits for the executing requests")
t0 = time.time()
d.proc.send_signal(signal.SIGTERM)
err = wait_exit(d, 10)
took = time.time() - t0
t.check(d.proc.returncode == 0 and took < 5, f"the second SIGTERM ends the drain at once ({took:.1f}s, rc={d.proc.returncode})")
t.check("drain cut short by a second signal" in err, "the summary says the drain was cut short")
th.join(timeout=60)
f = result.get("x", {})
t.check(f.get("sent") == 8 and f.get("lost") == 0 and f.get("badAnswers") == 0
        and f["rejected"]["shutting-down"] == 8, f"every request got exactly one answer, shutting-down ({f})")

# --- SIGQUIT stops as SIGTERM does ---------------------------------------------------
d = t.Daemon([b])
d.proc.send_signal(signal.SIGQUIT)
err = wait_exit(d, 20)
t.check(d.proc.returncode == 0 and "shut down (signal 3)" in err and not os.path.exists(d.sock),
        f"SIGQUIT: clean exit, socket removed (rc={d.proc.returncode})")
t.finish()
