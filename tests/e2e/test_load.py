# SPDX-License-Identifier: Apache-2.0
"""The load state for the tier in front (issue 29): /debug/fairgate/load says
per level the seats in use, the limit, the seats waiting and an estimated
wait, and the instance's load ((in use + waiting) / the seats the levels
share); /metrics has fairgate_load_ratio and
fairgate_level_estimated_wait_seconds.  Idle: load 0, nothing waits.  A
flood of 10 ms requests against 4 seats: load above 1, an estimated wait
near what the requests then wait; no tenant name in the document."""
import json
import re
import time

import fgtest as t

b0 = f"127.0.0.1:{t.free_port()}"
p0 = t.backend(b0, workers=4)
d = t.Daemon([b0 + ",seats=4"], ["--seat-limit", "4"])
url = f"http://{d.http_address()}/debug/fairgate/load"


def load():
    status, body = t.http_get(url)
    t.check(status == 200, f"GET /debug/fairgate/load: {status}")
    return json.loads(body)


doc = load()
lv = next(l for l in doc["levels"] if l["name"] == t.TEST_LEVEL)
t.check(doc["load"] == 0 and lv["seatsWaiting"] == 0 and lv["estimatedWaitSeconds"] == 0,
        f"idle: load 0, nothing waits ({doc['load']}, {lv['seatsWaiting']})")
t.check(not any(l["name"] == "exempt" for l in doc["levels"]), "exempt levels (no limit) are left out")
status, _ = t.http_get(url + "?x=1")
t.check(status == 400, f"a query parameter is refused ({status})")

lg = t.loadgen_start(d.addr, ["name=flood,user=secret-tenant,threads=40,service=10ms"], duration="4s", timeout="10s")
time.sleep(2)
doc, body = None, ""
for _ in range(20):  # the estimate needs a learned guess and a queue
    status, body = t.http_get(url)
    doc = json.loads(body)
    lv = next(l for l in doc["levels"] if l["name"] == t.TEST_LEVEL)
    if lv["seatsWaiting"] > 0 and lv["estimatedWaitSeconds"] > 0:
        break
    time.sleep(0.1)
t.check(doc["load"] > 1, f"a flood: load above 1 ({doc['load']:.2f})")
t.check(lv["seatsInUse"] <= lv["limit"] and lv["limit"] == 4, f"seats in use within the limit ({lv['seatsInUse']}/{lv['limit']})")
t.check(8 <= lv["serviceGuessMs"] <= 40, f"the level's service-time guess is learned ({lv['serviceGuessMs']:.1f} ms)")
# 36 waiting x 10 ms / 4 seats = 90 ms: the same order
t.check(0.02 <= lv["estimatedWaitSeconds"] <= 0.5, f"an estimated wait near the queue's ({lv['estimatedWaitSeconds']:.3f} s)")
t.check("secret-tenant" not in body, "no tenant name in the document")
_, metrics = t.http_get(f"http://{d.http_address()}/metrics")
m = re.search(r'^fairgate_load_ratio ([0-9.e+-]+)$', metrics, re.M)
t.check(m is not None and float(m.group(1)) > 0, "fairgate_load_ratio in /metrics")
t.check(re.search(r'^fairgate_level_estimated_wait_seconds\{priority_level="%s"\} ' % t.TEST_LEVEL, metrics, re.M)
        is not None, "fairgate_level_estimated_wait_seconds per level")
res = t.loadgen_result(lg)
t.check(res["flood"]["lost"] == 0, "every request answered")
t.end(d)
