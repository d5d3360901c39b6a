# SPDX-License-Identifier: Apache-2.0
"""Work estimates per class (issue 29; workEstimates: PerClass, the
default): a flow schema's LISTs that take 100 ms and its gets that take
5 ms are learned apart, and another schema's LISTs of the same level that
take 5 ms apart from both, exported as fairgate_work_estimate_seconds
{priority_level, flow_schema, verb}; workEstimateMax bounds what a class is
priced with; PerLevel exports none.  Every request is answered once."""
import re
import subprocess
import tempfile
import time

import fgtest as t

b0 = f"127.0.0.1:{t.free_port()}"
p0 = t.backend(b0, workers=16)
# A second schema into the same level: user "quick" (its LISTs take 5 ms).
QUICK = f"""---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {{name: quick}}
spec:
  priorityLevelConfiguration: {{name: {t.TEST_LEVEL}}}
  matchingPrecedence: 400
  distinguisherMethod: {{type: ByUser}}
  rules:
  - subjects: [{{kind: User, user: {{name: quick}}}}]
    resourceRules: [{{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}}]
"""
d = t.Daemon([b0], [], config=t.level_config() + QUICK)
res = t.loadgen(d.addr, ["name=lists,user=a,verb=list,threads=4,service=100ms,count=40",
                         "name=gets,user=b,verb=get,threads=4,service=5ms,count=400",
                         "name=quick,user=quick,verb=list,threads=2,service=5ms,count=100"], duration="20s")
t.check(res["lists"]["responses"] == 40 and res["gets"]["responses"] == 400 and res["quick"]["responses"] == 100,
        "every request answered")


def estimate(metrics, verb, schema="everyone"):
    m = re.search(r'^fairgate_work_estimate_seconds\{priority_level="([^"]+)",flow_schema="%s",verb="%s"\} '
                  r'([0-9.e+-]+)$' % (schema, verb), metrics, re.M)
    return (m.group(1), float(m.group(2))) if m else (None, None)


_, metrics = t.http_get(f"http://{d.http_address()}/metrics")
for _ in range(20):  # published every 100 ms
    if estimate(metrics, "list")[0]:
        break
    time.sleep(0.1)
    _, metrics = t.http_get(f"http://{d.http_address()}/metrics")
level, lst = estimate(metrics, "list")
_, get = estimate(metrics, "get")
t.check(lst is not None and 0.09 <= lst <= 0.2 and level == t.TEST_LEVEL,
        f"the LISTs' service time is learned ({lst} s, level {level})")
t.check(get is not None and 0.004 <= get <= 0.05, f"the gets' apart ({get} s)")
t.check(estimate(metrics, "watch")[0] is None, "a class without a completion is left out")
_, quick = estimate(metrics, "list", "quick")
t.check(quick is not None and 0.004 <= quick <= 0.05,
        f"another schema's LISTs of the same level apart ({quick} s against {lst} s)")

def apply_settings(spec):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\nspec: %s\n" % spec)
    return subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", f.name], capture_output=True,
                          text=True, timeout=10)


# workEstimateMax bounds what a class is priced with (live).
p = apply_settings("{workEstimateMax: 20ms}")
t.check(p.returncode == 0, f"apply workEstimateMax: {p.stderr.strip()}")
time.sleep(0.3)
_, metrics = t.http_get(f"http://{d.http_address()}/metrics")
_, lst2 = estimate(metrics, "list")
t.check(lst2 is not None and abs(lst2 - 0.02) < 1e-9, f"workEstimateMax bounds the LISTs' price ({lst2} s)")
p = apply_settings("{workEstimateMin: 2s, workEstimateMax: 1s}")
t.check(p.returncode != 0 and "workEstimateMin" in p.stdout + p.stderr, "min above max is refused, named")
p = apply_settings("{workEstimates: PerLevel}")
t.check(p.returncode == 0, "workEstimates: PerLevel applies live")
time.sleep(0.3)
_, metrics = t.http_get(f"http://{d.http_address()}/metrics")
t.check("fairgate_work_estimate_seconds{" not in metrics, "PerLevel: no per-class estimates exported")
res = t.loadgen(d.addr, ["name=after,user=c,verb=list,threads=2,service=10ms,count=50"], duration="10s")
t.check(res["after"]["responses"] == 50, "requests still answered after the switch")
t.end(d)
