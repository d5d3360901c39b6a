# SPDX-License-Identifier: Apache-2.0
"""Borrowing between priority levels in the running daemon (borrowing.md):
two Limited levels of 10 nominal seats each, lending half; one saturated by
a closed-loop load of slow requests, the other idle.  Within about two
borrowing periods the busy level's current limit (status) rises above its
nominal and its requests/s rise with it; a configuration change keeps the
levels' demand statistics; when the idle level gets busy the lent seats go
back and both levels return to their nominal limits."""
import atexit
import re
import subprocess
import tempfile
import time
import urllib.request

import fgtest as t

atexit.register(t.cleanup)  # an exception must not leave the daemon and the backend running

PERIOD = 0.5
SERVICE = 0.1  # seconds per request
NOMINAL = 10   # 20 seats; shares 100 + 100 + catch-all's 5


def level(name, qll=50):
    return f"""apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {{name: {name}}}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    lendablePercent: 50
    limitResponse:
      type: Queue
      queuing: {{queues: 16, handSize: 4, queueLengthLimit: {qll}}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: {name}}}
spec:
  priorityLevelConfiguration: {{name: {name}}}
  matchingPrecedence: 500
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{{kind: User, user: {{name: {name}-user}}}}]
    resourceRules: [{{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}]
"""


def config(idle_qll=50):
    return level("busy") + "---\n" + level("idle", idle_qll)


b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=64, duration="60s")
d = t.Daemon([b], ["--seat-limit", "20", "--borrowing-period", f"{int(PERIOD * 1000)}ms", "--queue-wait", "10s"],
             config=config())


def lv(st, name):
    return t.level_of(st, name)


# The allotter thread's first step follows the configuration (a round at once).
st = d.wait_status(lambda s: s["borrowing"]["rounds"] >= 1, timeout=5)
t.check(st["borrowing"]["periodSeconds"] == PERIOD, f"the borrowing period in force ({st['borrowing']})")
bb = lv(st, "busy")["borrowing"]
t.check(bb["nominal"] == NOMINAL and bb["lower"] == NOMINAL // 2 and bb["upper"] == NOMINAL + 20,
        f"nominal, lower and upper limits of a level lending half ({bb})")

busy = t.loadgen_start(d.addr, [f"name=busy,user=busy-user,threads=30,service={int(SERVICE * 1000)}ms"],
                       duration="9s", timeout="12s")
t0 = time.time()
st = d.wait_status(lambda s: lv(s, "busy")["borrowing"]["current"] > NOMINAL, timeout=4 * PERIOD + 1)
rose = time.time() - t0
cur = lv(st, "busy")["borrowing"]["current"]
t.check(cur > NOMINAL, f"the busy level borrows: current {cur} > nominal {NOMINAL} after {rose:.2f}s")
t.check(lv(st, "idle")["borrowing"]["current"] < NOMINAL, f"the idle level lends ({lv(st, 'idle')['borrowing']})")
t.check(st["borrowing"]["fairFrac"] > 0, f"the round's fair fraction ({st['borrowing']})")
t.check(lv(st, "busy")["seatLimit"] == cur, f"the queue set follows the current limit ({lv(st, 'busy')['seatLimit']})")

# Requests/s over a second at the borrowed limit, against what the nominal allows.
time.sleep(PERIOD)
s1 = d.status()
time.sleep(1.5)
s2 = d.status()
rate = (lv(s2, "busy")["dispatched"] - lv(s1, "busy")["dispatched"]) / 1.5
limit = lv(s2, "busy")["borrowing"]["current"]
t.check(rate > 1.2 * NOMINAL / SERVICE, f"requests/s rose with the limit: {rate:.0f}/s at {limit} seats "
        f"(nominal allows {NOMINAL / SERVICE:.0f}/s)")
t.check(max(lv(s, "busy")["seatsInUse"] for s in (s1, s2)) <= limit, "seats in use within the current limit")

# /metrics: Kubernetes' names for the borrowed limit and the round's figures.
with urllib.request.urlopen(f"http://{d.http_address()}/metrics", timeout=5) as r:
    metrics = r.read().decode()
st = d.status()


def sample(name, labels='{priority_level="busy"}'):
    m = re.search("^" + re.escape(name + labels) + r" (\S+)$", metrics, re.M)
    return float(m.group(1)) if m else None


cur = sample("fairgate_flowcontrol_current_limit_seats")
t.check(cur is not None and cur > NOMINAL, f"current_limit_seats shows the borrowed limit ({cur})")
t.check(sample("fairgate_flowcontrol_nominal_limit_seats") == NOMINAL, "nominal_limit_seats")
for name in ("demand_seats_high_watermark", "demand_seats_average", "demand_seats_smoothed", "target_seats"):
    v = sample("fairgate_flowcontrol_" + name)
    t.check(v is not None and v > NOMINAL, f"{name} of the busy level ({v})")
t.check(sample("fairgate_flowcontrol_demand_seats_stdev") is not None, "demand_seats_stdev")
ff = sample("fairgate_flowcontrol_seat_fair_frac", "")
t.check(ff is not None and ff > 0, f"seat_fair_frac ({ff})")

out = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "get", "prioritylevelconfigurations", "-o", "wide"],
                     capture_output=True, text=True, timeout=10)
rows = {ln.split()[0]: ln.split() for ln in out.stdout.splitlines()}
t.check(out.returncode == 0 and rows["NAME"][-4:] == ["NOMINAL", "LOWER", "UPPER", "CURRENT"]
        and rows["busy"][-4:-1] == [str(NOMINAL), str(NOMINAL // 2), str(NOMINAL + 20)]
        and int(rows["busy"][-1]) > NOMINAL, f"get prioritylevelconfigurations -o wide:\n{out.stdout}{out.stderr}")

# A configuration change keeps the levels' statistics (Kubernetes matches levels by name).
f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
f.write(config(idle_qll=40))
f.close()
rounds = s2["borrowing"]["rounds"]
out = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True, text=True,
                     timeout=10)
t.check(out.returncode == 0, f"apply: {out.stdout}{out.stderr}")
st = d.wait_status(lambda s: s["borrowing"]["rounds"] > rounds, timeout=2)
bb = lv(st, "busy")["borrowing"]
t.check(bb["demand"]["smoothed"] > NOMINAL and bb["current"] > NOMINAL,
        f"after a configuration change the busy level keeps its statistics and its limit ({bb})")

# The idle level gets busy: the lent seats go back.
idle = t.loadgen_start(d.addr, [f"name=idle,user=idle-user,threads=30,service={int(SERVICE * 1000)}ms"],
                       duration="4s", timeout="12s")
st = d.wait_status(lambda s: lv(s, "busy")["borrowing"]["current"] <= NOMINAL
                   and lv(s, "idle")["borrowing"]["current"] >= NOMINAL, timeout=4 * PERIOD + 1)
t.check(lv(st, "busy")["borrowing"]["current"] <= NOMINAL and lv(st, "idle")["borrowing"]["current"] >= NOMINAL,
        f"seats given back: busy {lv(st, 'busy')['borrowing']['current']}, idle "
        f"{lv(st, 'idle')['borrowing']['current']} (nominal {NOMINAL})")
r_idle = t.loadgen_result(idle, wait=30)
r_busy = t.loadgen_result(busy, wait=30)
for name, r in (("busy", r_busy["busy"]), ("idle", r_idle["idle"])):
    t.check(r["lost"] == 0 and r["badAnswers"] == 0 and r["responses"] > 0, f"{name}: answered ({r['responses']})")
st = d.wait_idle()
t.check(t.invariant_holds(st), "accounting invariant")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
