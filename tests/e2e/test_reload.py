# SPDX-License-Identifier: Apache-2.0
"""Hot reload under load: while three flows send, 100 configurations are
applied through the control socket (queue counts up and down, the level
deleted and re-created, limits changed); every request is answered exactly
once and nothing leaks.  An invalid configuration is refused and the old one
keeps serving."""
import subprocess
import tempfile
import threading
import time

import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=8)
d = t.Daemon([b], ["--seat-limit", "8", "--queue-wait", "5s"])
ctl = [t.FAIRGATECTL, "--socket", d.sock]


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


configs = [write(t.level_config(queues=64, hand=6, qll=50)), write(t.level_config(queues=8, hand=2, qll=10)),
           write(t.level_config(queues=256, hand=4, qll=5))]
result = {}


def run():
    result.update(t.loadgen(d.addr, [f"name=f{i},user=u{i},threads=8,service=2ms" for i in range(3)],
                            duration="8s", timeout="6s"))


th = threading.Thread(target=run)
th.start()
time.sleep(0.5)
applied = refused = 0
start_gen = d.status()["configGeneration"]
for i in range(100):
    if i % 10 == 5:  # the level and its schema go away, then come back
        a = subprocess.run(ctl + ["delete", "fs", "everyone"], capture_output=True, text=True)
        b2 = subprocess.run(ctl + ["delete", "plc", t.TEST_LEVEL], capture_output=True, text=True)
        ok = a.returncode == 0 and b2.returncode == 0
    else:
        ok = subprocess.run(ctl + ["apply", "-f", configs[i % 3]], capture_output=True, text=True).returncode == 0
    applied += ok
    time.sleep(0.05)
bad = write("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: tests}\n"
            "spec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {queues: 512, handSize: 8}}}}\n")
gen_before = d.status()["configGeneration"]
p = subprocess.run(ctl + ["apply", "-f", bad], capture_output=True, text=True)
t.check(p.returncode == 1 and "required entropy bits" in p.stderr and "nothing was changed" in p.stderr,
        "an invalid configuration under load is refused with its errors")
t.check(d.status()["configGeneration"] == gen_before, "the refused configuration changed nothing")
th.join(timeout=120)
t.check(applied == 100, f"100 configuration changes applied under load ({applied})")
st = d.wait_idle()
t.check(st["configGeneration"] >= start_gen + 100, f"generations advanced ({start_gen} -> {st['configGeneration']})")
total_sent = sum(f["sent"] for f in result.values())
answered = sum(f["responses"] + f["rejectedTotal"] for f in result.values())
t.check(total_sent > 1000 and answered == total_sent, f"every request answered ({answered}/{total_sent})")
t.check(all(f["lost"] == 0 and f["badAnswers"] == 0 for f in result.values()), "nothing lost, nothing answered twice")
served = sum(f["responses"] for f in result.values())
# While the level is deleted, requests fall to catch-all (Reject) and the
# closed-loop clients retry at once, so rejects dominate the count.
t.check(served > 1000, f"requests kept being served through the reloads ({served} responses)")
t.check(t.invariant_holds(st) and st["counters"]["buffersInUse"] == 0, "accounting invariant, no buffer leaked")
names = [lv["name"] for lv in st["priorityLevels"]]
t.check(names.count(t.TEST_LEVEL) == 1, "the re-created level is one level again")
# After the load: the last configuration is in force and serves.
r = t.loadgen(d.addr, ["name=after,user=z,threads=2,service=1ms,count=50"], duration="10s")
t.check(r["after"]["responses"] == 50, "serving after the reloads")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
