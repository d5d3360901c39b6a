# SPDX-License-Identifier: Apache-2.0
"""FairSharing objects on a running daemon (fair-queuing.md §10, §11;
configuration.md "FairSharing"): two tenants of one level saturate its 8
seats; with weights 3 and 1 they are served 3:1, status shows each flow's
weight and its deserved share (6 and 2 seats), explain shows the weight; a
live apply swapping the weights swaps the proportions; a live apply of the
UsageBased policy shows in status with the flows' decayed usage; nothing is
lost throughout."""
import atexit
import json
import re
import subprocess
import tempfile
import time
import urllib.request

import fgtest as t

atexit.register(t.cleanup)  # an exception must not leave the daemon and the backend running

SERVICE = 0.1  # seconds per request
SEATS = 8


def fair_sharing(alice, bob, policy="MaxMin"):
    return f"""---
apiVersion: fairgate.io/v1alpha1
kind: FairSharing
metadata: {{name: {t.TEST_LEVEL}}}
spec:
  policy: {policy}
  usageHalfLifeTime: 10s
  flowWeights:
  - {{flowSchema: everyone, distinguisher: alice, weight: {alice}}}
  - {{flowSchema: everyone, distinguisher: bob, weight: {bob}}}
"""


b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=64, duration="60s")
d = t.Daemon([b], ["--seat-limit", str(SEATS), "--queue-wait", "20s"],
             config=t.level_config(queues=64, hand=1, qll=200) + fair_sharing(3, 1))
ctl = [t.FAIRGATECTL, "--socket", d.sock]


def explain(user):
    out = subprocess.run(ctl + ["explain", "--user", user, "--group", "system:authenticated", "-o", "json"],
                         capture_output=True, text=True, timeout=10)
    t.check(out.returncode == 0, f"explain {user}: {out.stderr}")
    return json.loads(out.stdout)


ea, eb = explain("alice"), explain("bob")
t.check(ea["flowWeight"] == 3 and eb["flowWeight"] == 1, f"explain shows the flow weights ({ea}, {eb})")
# Hand 1: each tenant's one queue; the proportions below need them apart.
t.check(ea["queue"] != eb["queue"], f"alice and bob in different queues ({ea['queue']}, {eb['queue']})")


def dispatched(st):
    return {f["flow"].split("/")[-1]: f["dispatched"] for f in st["flows"] if f["priorityLevel"] == t.TEST_LEVEL}


def rates(seconds):
    s1 = d.status()
    time.sleep(seconds)
    s2 = d.status()
    a, b2 = dispatched(s1), dispatched(s2)
    return {u: (b2.get(u, 0) - a.get(u, 0)) / seconds for u in ("alice", "bob")}, s2


load = t.loadgen_start(d.addr, [f"name=alice,user=alice,groups=system:authenticated,threads=20,"
                                f"service={int(SERVICE * 1000)}ms",
                                f"name=bob,user=bob,groups=system:authenticated,threads=20,"
                                f"service={int(SERVICE * 1000)}ms"], duration="10s", timeout="25s")
time.sleep(1.5)
r, st = rates(2.0)
ratio = r["alice"] / max(r["bob"], 1e-9)
t.check(2.4 <= ratio <= 3.6, f"weights 3 and 1: alice {r['alice']:.0f}/s, bob {r['bob']:.0f}/s (ratio {ratio:.2f})")
fs = t.level_of(st)["fairSharing"]
flows = {f["flow"].split("/")[-1]: f for f in fs["flows"]}
t.check(fs["policy"] == "MaxMin" and fs["weighted"] and fs["activeFlows"] == 2, f"status: the level's policy ({fs})")
t.check(flows["alice"]["weight"] == 3 and flows["bob"]["weight"] == 1, f"status: the flows' weights ({flows})")
t.check(abs(flows["alice"]["deserved"] - 6) < 0.01 and abs(flows["bob"]["deserved"] - 2) < 0.01,
        f"status: deserved shares 6 and 2 of {SEATS} seats ({flows})")
t.check(flows["alice"]["usage"] is None, "no usage on a MaxMin level")

# /metrics: no tenant's name by default (security.md); with
# metricsFlowLabels (live), the same figures for the busiest flows of each level.
def scrape():
    with urllib.request.urlopen(f"http://{d.http_address()}/metrics", timeout=5) as resp:
        return resp.read().decode()


metrics = scrape()
t.check("alice" not in metrics and 'flow="' not in metrics and "fairgate_fair_sharing_flow_" not in metrics,
        "metrics: no flow label and no tenant's name by default")
out = subprocess.run(ctl + ["apply", "-f", "-"], capture_output=True, text=True, timeout=10,
                     input="apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: {metricsFlowLabels: true}\n")
t.check(out.returncode == 0, f"apply metricsFlowLabels: true ({out.stderr.strip()})")
metrics = scrape()


def sample(name, labels):
    m = re.search("^" + re.escape(name + labels) + r" (\S+)$", metrics, re.M)
    return float(m.group(1)) if m else None


alice = f'{{priority_level="{t.TEST_LEVEL}",flow="everyone/alice"}}'
t.check(sample("fairgate_fair_sharing_policy_info", f'{{priority_level="{t.TEST_LEVEL}",policy="MaxMin"}}') == 1
        and sample("fairgate_fair_sharing_active_flows", f'{{priority_level="{t.TEST_LEVEL}"}}') == 2,
        "metrics: the level's policy and active flows")
t.check(sample("fairgate_fair_sharing_flow_weight", alice) == 3
        and sample("fairgate_fair_sharing_flow_deserved_seats", alice) == 6
        and sample("fairgate_fair_sharing_flow_usage_seat_seconds", alice) is None,
        "metrics: alice's weight and deserved seats, no usage on MaxMin")

# Live: the weights swap.
f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
f.write(fair_sharing(1, 3))
f.close()
out = subprocess.run(ctl + ["apply", "-f", f.name], capture_output=True, text=True, timeout=10)
t.check(out.returncode == 0 and "configured" in out.stdout, f"apply: {out.stdout}{out.stderr}")
time.sleep(1.0)
r, st = rates(2.0)
ratio = r["bob"] / max(r["alice"], 1e-9)
t.check(2.4 <= ratio <= 3.6, f"weights swapped live: alice {r['alice']:.0f}/s, bob {r['bob']:.0f}/s (ratio {ratio:.2f})")

# Live: UsageBased; the flows' usage shows.
with open(f.name, "w") as fh:
    fh.write(fair_sharing(1, 3, "UsageBased"))
out = subprocess.run(ctl + ["apply", "-f", f.name], capture_output=True, text=True, timeout=10)
t.check(out.returncode == 0, f"apply UsageBased: {out.stdout}{out.stderr}")
st = d.wait_status(lambda s: t.level_of(s)["fairSharing"]["policy"] == "UsageBased"
                   and all((fl["usage"] or 0) > 0 for fl in t.level_of(s)["fairSharing"]["flows"]), timeout=5)
fs = t.level_of(st)["fairSharing"]
t.check(fs["policy"] == "UsageBased" and len(fs["flows"]) == 2 and all((fl["usage"] or 0) > 0 for fl in fs["flows"]),
        f"status: UsageBased with the flows' usage ({fs})")
out = subprocess.run(ctl + ["get", "fairsharings", "-o", "wide"], capture_output=True, text=True, timeout=10)
rows = {ln.split()[0]: ln.split() for ln in out.stdout.splitlines() if ln.strip()}
t.check(out.returncode == 0 and rows[t.TEST_LEVEL][1] == "UsageBased" and rows["everyone/bob"][1] == "3"
        and float(rows["everyone/bob"][2]) > 0 and float(rows["everyone/bob"][-1]) == 6.0,
        f"get fairsharings -o wide: the busiest flows' weight, usage and deserved share\n{out.stdout}{out.stderr}")

out = subprocess.run(ctl + ["status"], capture_output=True, text=True, timeout=10)
t.check(out.returncode == 0 and f"FAIR SHARING {t.TEST_LEVEL}: UsageBased with weights" in out.stdout
        and "everyone/bob" in out.stdout and "DESERVED" in out.stdout,
        f"status table: the level's fair sharing and busiest flows\n{out.stdout}")

res = t.loadgen_result(load, wait=40)
for name in ("alice", "bob"):
    fr = res[name]
    t.check(fr["lost"] == 0 and fr["badAnswers"] == 0 and fr["responses"] > 0,
            f"{name}: every request answered ({fr['responses']} responses, {fr['lost']} lost)")
st = d.wait_idle()
t.check(t.invariant_holds(st), "accounting invariant")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
