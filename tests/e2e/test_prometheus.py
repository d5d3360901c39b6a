# SPDX-License-Identifier: Apache-2.0
"""A real Prometheus server (/usr/bin/prometheus, Debian package prometheus)
scraping fairgate's /metrics every second on loopback, with the shipped
alerting rules (docs/alerts/fairgate-alerts.yml) loaded: after a load with
answers and queue-full rejects has ended and Prometheus has scraped the idle
daemon, its query API gives exactly the load generator's counts; the rules
load and evaluate without error; `up` is 1, and 0 once fairgate is gone.
Every wait is bounded; Prometheus, fairgate, the backend and the temporary
directory go also when a check or a wait fails."""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import fgtest as t

PROMETHEUS = os.environ.get("PROMETHEUS", "/usr/bin/prometheus")
RULES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "alerts", "fairgate-alerts.yml")
JOB = "fairgate"
READY_S = 30    # Prometheus' start-up (TSDB, rule loading) takes a few seconds on a busy machine
SCRAPE_S = 15   # a scrape every second: a fresh sample within this, or something is wrong


def http_get(url, timeout=5):
    """(status or None, body text)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as e:
        return None, repr(e)


def api(prom, path, **params):
    """The "data" of a Prometheus API answer; raises on an error answer."""
    st, body = http_get(f"http://{prom}/api/v1/{path}?" + urllib.parse.urlencode(params))
    if st != 200:
        raise RuntimeError(f"/api/v1/{path} {params}: {st} {body[:300]}")
    doc = json.loads(body)
    if doc.get("status") != "success":
        raise RuntimeError(f"/api/v1/{path} {params}: {body[:300]}")
    return doc["data"]


def query(prom, q):
    """An instant query's vector as [(labels, float value)]."""
    data = api(prom, "query", query=q)
    if data["resultType"] != "vector":
        raise RuntimeError(f"{q}: a {data['resultType']}, not a vector")
    return [(r["metric"], float(r["value"][1])) for r in data["result"]]


def scalar(prom, q):
    """The value of a query expected to give one sample, None for none."""
    v = query(prom, q)
    if len(v) > 1:
        raise RuntimeError(f"{q}: {len(v)} samples")
    return v[0][1] if v else None


def wait_for(what, pred, timeout):
    """pred() until it is true (returns it) or timeout seconds have passed (None)."""
    deadline = time.time() + timeout
    while True:
        try:
            v = pred()
        except (RuntimeError, ValueError, KeyError):
            v = None
        if v:
            return v
        if time.time() >= deadline:
            print(f"     waited {timeout}s for {what}", flush=True)
            return None
        time.sleep(0.25)


def start_prometheus(tmp, target):
    if not os.access(PROMETHEUS, os.X_OK):
        raise RuntimeError(f"{PROMETHEUS} is missing: install the Debian package prometheus "
                           "(.ci/install-deps does); this test does not skip")
    port = t.free_port(socket.SOCK_STREAM)
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: ["{os.path.abspath(RULES)}"]
scrape_configs:
  - job_name: {JOB}
    static_configs:
      - targets: ["{target}"]
""")
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    # The log goes to a file: Prometheus writes more than a pipe holds, and
    # nothing reads it until a check fails.
    p = t.spawn([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                 f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=1h",
                 "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    return p, f"127.0.0.1:{port}"


def prometheus_log(tmp):
    try:
        with open(os.path.join(tmp, "prometheus.log")) as f:
            return f.read()[-3000:]
    except OSError:
        return ""


def main(tmp):
    b = f"127.0.0.1:{t.free_port()}"
    t.backend(b, workers=8)
    # Few seats and short queues (as test_overload) under an open loop of 1000/s
    # (light on a shared machine): about 100/s answered, the rest queue-full.
    d = t.Daemon([b], ["--seat-limit", "2", "--queue-wait", "10s"], level=dict(qll=2))
    target = d.http_address()
    prom_proc, prom = start_prometheus(tmp, target)

    began = time.time()
    ready = wait_for("/-/ready", lambda: prom_proc.poll() is None and http_get(f"http://{prom}/-/ready")[0] == 200,
                     READY_S)
    t.check(ready is not None, f"Prometheus ready within {READY_S}s ({time.time() - began:.1f}s; "
            f"exit {prom_proc.poll()}) {'' if ready else prometheus_log(tmp)}")
    if not ready:
        return
    up = wait_for("up == 1", lambda: scalar(prom, f'up{{job="{JOB}"}}') == 1, SCRAPE_S)
    t.check(up is not None, f'up{{job="{JOB}"}} == 1: Prometheus scrapes fairgate at {target}')

    res = t.loadgen(d.addr, ["name=m,user=m,rate=1000,service=20ms"], duration="2s", timeout="5s")
    f = res["m"]
    st = d.wait_idle()
    c = st["counters"]
    idle_at = time.time()
    t.check(f["sent"] > 0 and f["lost"] == 0 and f["badAnswers"] == 0 and
            f["responses"] + f["rejectedTotal"] == f["sent"],
            f"the load generator got one answer per request ({f['sent']} sent, {f['responses']} responses, "
            f"{f['rejectedTotal']} rejects)")
    t.check(f["responses"] > 0 and f["rejected"]["queue-full"] > 0,
            f"some requests dispatched, some rejected queue-full ({f['rejected']['queue-full']})")
    # Every dispatched request was answered by the backend (dispatched =
    # responses + backend-timeout, no-backend or shutting-down rejects of
    # dispatched or held requests; none of those here), so the counts below
    # are exact: no tolerance.
    after = [r for r in ("backend-timeout", "no-backend", "shutting-down") if f["rejected"].get(r, 0)]
    t.check(not after, f"no request rejected after dispatch ({after})")
    t.check(c["dispatched"] == f["responses"], f"status: dispatched = responses ({c['dispatched']})")

    # A sample scraped after the daemon went idle: scrape timestamps are when
    # the scrape began, on this host's clock.
    fresh = wait_for("a scrape after the load",
                     lambda: (scalar(prom, "timestamp(fairgate_requests_received_total)") or 0) > idle_at,
                     SCRAPE_S)
    t.check(fresh is not None, f"Prometheus scraped fairgate after the load ended (within {SCRAPE_S}s)")
    dispatched = scalar(prom, "sum(fairgate_requests_dispatched_total)")
    rejected = scalar(prom, "sum(fairgate_requests_rejected_total)")
    received = scalar(prom, "sum(fairgate_requests_received_total)")
    queue_full = scalar(prom, 'sum(fairgate_requests_rejected_total{reason="queue-full"})')
    t.check(dispatched == f["responses"],
            f"Prometheus: sum(fairgate_requests_dispatched_total) = the client's responses ({dispatched} vs "
            f"{f['responses']})")
    t.check(rejected == f["rejectedTotal"],
            f"Prometheus: sum(fairgate_requests_rejected_total) = the client's rejects ({rejected} vs "
            f"{f['rejectedTotal']})")
    t.check(queue_full == f["rejected"]["queue-full"], f"Prometheus: queue-full rejects = the client's ({queue_full})")
    t.check(received == f["sent"], f"Prometheus: requests received = the client's sent ({received} vs {f['sent']})")
    # Kubernetes' names, per (priority_level, flow_schema), through PromQL.
    by_pl = f'{{priority_level="{t.TEST_LEVEL}",flow_schema="everyone"}}'
    fc_dispatched = scalar(prom, f"sum(fairgate_flowcontrol_dispatched_requests_total{by_pl})")
    fc_rejected = scalar(prom, f"sum(fairgate_flowcontrol_rejected_requests_total{by_pl})")
    fc_waits = scalar(prom, f"sum(fairgate_flowcontrol_request_wait_duration_seconds_count{by_pl})")
    t.check(fc_dispatched == f["responses"],
            f"Prometheus: fairgate_flowcontrol_dispatched_requests_total = the client's responses ({fc_dispatched})")
    t.check(fc_rejected == f["rejectedTotal"],
            f"Prometheus: fairgate_flowcontrol_rejected_requests_total = the client's rejects ({fc_rejected})")
    t.check(fc_waits == f["sent"], f"Prometheus: one queue-wait observation per request ({fc_waits})")
    t.check(scalar(prom, f'up{{job="{JOB}"}}') == 1, f'up{{job="{JOB}"}} == 1 after the load')
    series = query(prom, '{__name__=~"fairgate_.+"}')
    t.check(not any(k in ("flow", "user", "client") for m, _ in series for k in m),
            f"no series scraped from fairgate has a flow, user or client label ({len(series)} series)")

    # The shipped rules: loaded, evaluated every second without an error.
    def rules_evaluated():
        groups = api(prom, "rules")["groups"]
        g = [x for x in groups if x["name"] == "fairgate"]
        return g and all(r.get("health") == "ok" for r in g[0]["rules"]) and g[0]["rules"]
    rules = wait_for("the rules evaluated", rules_evaluated, SCRAPE_S)
    bad = [] if rules else [(r["name"], r.get("health"), r.get("lastError")) for x in api(prom, "rules")["groups"]
                            for r in x["rules"] if r.get("health") != "ok"]
    t.check(rules is not None and len(rules) >= 8,
            f"the {len(rules or [])} rules of group fairgate load and evaluate in Prometheus {bad}")
    # The load sheds on purpose, so once the flowcontrol metrics exist
    # FairgateRequestsRejected may be pending (its rate over 5m); it cannot fire
    # in 10 s, nor can anything else but FairgateAnswersLost.  Alerts about
    # faults must not even be pending.
    alerts = api(prom, "alerts")["alerts"]
    firing = [a["labels"]["alertname"] for a in alerts if a["state"] == "firing"]
    faults = [a["labels"]["alertname"] for a in alerts if a["labels"]["alertname"] in
              ("FairgateAnswersLost", "FairgateBackendErrors", "FairgateBackendEjected", "FairgateWorkerConfigStale",
               "FairgateTargetDown")]
    t.check(not firing and not faults, f"no alert firing, none about a fault pending, after a healthy load "
            f"({[(a['labels']['alertname'], a['state']) for a in alerts]})")

    # fairgate gone: the scrape fails, up is 0 and the target-down alert is pending.
    rc, _ = d.stop()
    t.check(rc == 0, f"fairgate exits cleanly (rc={rc})")
    down = wait_for("up == 0", lambda: scalar(prom, f'up{{job="{JOB}"}}') == 0, SCRAPE_S)
    t.check(down is not None, f'up{{job="{JOB}"}} == 0 once fairgate is gone')
    pending = wait_for("FairgateTargetDown pending", lambda: [
        a for a in api(prom, "alerts")["alerts"]
        if a["labels"]["alertname"] == "FairgateTargetDown" and a["labels"].get("instance") == target], SCRAPE_S)
    t.check(pending is not None and pending[0]["state"] in ("pending", "firing"),
            f"FairgateTargetDown is pending for {target}")


tmp = tempfile.mkdtemp(prefix="fg-prom-")
begun = time.time()
try:
    main(tmp)
except Exception as e:  # a failed wait or API answer is a failed check, after which everything is stopped
    t.check(False, f"{type(e).__name__}: {e}")
    print(prometheus_log(tmp), file=sys.stderr)
finally:
    t.cleanup()
    shutil.rmtree(tmp, ignore_errors=True)
print(f"   ({time.time() - begun:.1f}s)")
t.finish()
