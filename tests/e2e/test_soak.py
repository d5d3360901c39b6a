# SPDX-License-Identifier: Apache-2.0
"""Soak: mixed load (closed- and open-loop flows, users on two levels) against
a socket-mode daemon for SOAK_SECONDS (default 600; argv[1] overrides), with a
configuration applied every few seconds (two valid ones, alternately) and a
backend killed and started again now and then.  The daemon's resident memory,
open descriptors and buffers in use are sampled every second.  At the end:
memory and descriptors flat after warm-up, buffers back to their idle
baseline, every request answered exactly once (nothing lost, even those in
flight at a backend that died)."""
import os
import subprocess
import sys
import tempfile
import time

import fgtest as t

SECONDS = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("SOAK_SECONDS", "600"))
APPLY_EVERY, KILL_EVERY, DEAD_FOR = 5.0, 20.0, 4.0
RSS_SLACK_KB = 4096  # page-touching noise allowed between the first and the last quarter


def config(tests_queues, tests_hand, batch_shares, batch_queues):
    """Two queued levels: `batch` for the group batch, `tests` for everyone else."""
    return t.level_config(queues=tests_queues, hand=tests_hand, qll=50) + f"""---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: batch}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: {batch_shares}
    limitResponse:
      type: Queue
      queuing: {{queues: {batch_queues}, handSize: 4, queueLengthLimit: 50}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: batch}}
spec:
  priorityLevelConfiguration: {{name: batch}}
  matchingPrecedence: 400
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{{kind: Group, group: {{name: batch}}}}]
    resourceRules: [{{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}]
"""


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


configs = [write(config(64, 6, 300, 16)), write(config(8, 4, 100, 32))]
addrs = [f"127.0.0.1:{t.free_port()}" for _ in range(2)]
life = f"{SECONDS + 120}s"
backends = [t.backend(a, workers=32, duration=life) for a in addrs]
log = tempfile.mktemp(prefix="fg-soak-", suffix=".log", dir="/tmp")
d = t.Daemon(addrs, ["--seat-limit", "24", "--queue-wait", "2s", "--backend-timeout", "1s"],
             config=open(configs[0]).read(), log=log)
ctl = [t.FAIRGATECTL, "--socket", d.sock]
pid = d.proc.pid
time.sleep(0.5)
baseline = d.status()["counters"]["buffersInUse"]

flows = ["name=alice,user=alice,threads=2,service=5ms",
         "name=bob,user=bob,rate=150,service=2ms",
         "name=batch,user=batcher,groups=batch,threads=4,service=10ms",
         "name=cron,user=cron,groups=batch,rate=80,service=3ms"]
lg = t.loadgen_start(d.addr, flows, duration=f"{SECONDS}s", timeout="5s")
print(f"soak: {SECONDS}s, daemon pid {pid}, log {log}", flush=True)

samples = []  # (seconds since start, rss kB, fds, buffers in use)
applied = apply_failed = kills = 0
start = time.time()
next_apply, next_kill, revive = start + APPLY_EVERY, start + KILL_EVERY, None
victim = 0
while lg.poll() is None and time.time() < start + SECONDS + 60:
    now = time.time()
    if d.proc.poll() is not None:
        break
    st = d.status()
    samples.append((now - start, rss_kb(pid), fds(pid), st["counters"]["buffersInUse"]))
    if now >= next_apply:
        p = subprocess.run(ctl + ["apply", "-f", configs[applied % 2]], capture_output=True, text=True, timeout=10)
        applied += p.returncode == 0
        apply_failed += p.returncode != 0
        next_apply = now + APPLY_EVERY
    if revive is None and now >= next_kill and now < start + SECONDS - DEAD_FOR - 2:
        backends[victim].kill()
        backends[victim].wait(timeout=10)
        kills += 1
        revive = now + DEAD_FOR
    if revive is not None and now >= revive:
        backends[victim] = t.backend(addrs[victim], workers=32, duration=life)
        victim, revive, next_kill = 1 - victim, None, now + KILL_EVERY
    if len(samples) % 60 == 0:
        print(f"  t={now - start:5.0f}s rss={samples[-1][1]} kB fds={samples[-1][2]} buffers={samples[-1][3]} "
              f"received={st['counters']['requestsReceived']}", flush=True)
    time.sleep(max(0.0, 1.0 - (time.time() - now)))

t.check(d.proc.poll() is None, "the daemon ran the whole soak")
res = t.loadgen_result(lg, wait=SECONDS + 60)
if revive is not None:
    backends[victim] = t.backend(addrs[victim], workers=32, duration=life)
for name, f in res.items():
    t.check(f["sent"] > 0 and f["sent"] == f["responses"] + f["rejectedTotal"] and f["lost"] == 0
            and f["badAnswers"] == 0,
            f"{name}: every request answered exactly once (sent {f['sent']}, responses {f['responses']}, "
            f"rejected {f['rejectedTotal']} {dict((k, v) for k, v in f['rejected'].items() if v)}, "
            f"lost {f['lost']}, bad {f['badAnswers']})")
    t.check(f["responses"] > f["sent"] // 2, f"{name}: mostly served ({f['responses']} of {f['sent']})")
t.check(applied >= SECONDS // APPLY_EVERY - 2 and apply_failed == 0,
        f"configurations applied under load ({applied}, {apply_failed} refused)")
t.check(kills >= SECONDS // (KILL_EVERY + DEAD_FOR) - 1 and kills >= 1, f"backends killed and restarted ({kills})")

st = d.wait_idle(timeout=15)
c = st["counters"]
t.check(t.invariant_holds(st), "received = responded + rejected + waiting + executing")
t.check(c["requestsReceived"] == sum(f["sent"] for f in res.values()),
        f"fairgate received what loadgen sent ({c['requestsReceived']})")
idle = d.wait_status(lambda st: st["counters"]["buffersInUse"] == baseline, timeout=5)
t.check(idle["counters"]["buffersInUse"] == baseline,
        f"buffers back to the idle baseline ({idle['counters']['buffersInUse']} vs {baseline})")

# Flat: the last quarter against the first quarter after warm-up (pools and
# request slots are touched progressively while the run warms up).
warm = max(15.0, SECONDS * 0.25)
steady = [s for s in samples if s[0] >= warm]
q = max(1, len(steady) // 4)
first, last = steady[:q], steady[-q:]
if len(steady) >= 8:
    rss1, rss4 = max(s[1] for s in first), max(s[1] for s in last)
    fd1, fd4 = max(s[2] for s in first), max(s[2] for s in last)
    t.check(rss4 <= rss1 + max(RSS_SLACK_KB, rss1 // 50),
            f"resident memory flat: last quarter max {rss4} kB, first quarter max {rss1} kB")
    t.check(fd4 <= fd1 + 2, f"open descriptors flat: last quarter max {fd4}, first quarter max {fd1}")
else:
    t.check(False, f"enough samples after warm-up ({len(steady)})")
rc, _ = d.stop()
t.check(rc == 0, f"clean exit (rc={rc})")
if not t._failures:
    os.unlink(log)
for path in configs:
    os.unlink(path)
t.finish()
