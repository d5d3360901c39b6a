# SPDX-License-Identifier: Apache-2.0
"""The in-process DPDK harness runs here (ring-backed port, no hugepages, no
NIC) and reports every figure the benchmark page uses.  Not a timed test: it
checks the numbers exist and are consistent, not how large they are."""
import json
import subprocess

import fgtest as t

p = subprocess.run([t.BENCH, "dataplane", "--duration", "1s", "--flows", "2000", "--json"],
                   capture_output=True, text=True, timeout=120)
t.check(p.returncode == 0, f"fairgate-bench dataplane runs (rc={p.returncode}) {p.stderr.strip()[-300:]}")
text = p.stdout[p.stdout.index("{"):] if "{" in p.stdout else "{}"
r = json.loads(text)
for key in ("requests_per_sec", "cycles_per_request", "forward_only_requests_per_sec", "rte_sched_cycles_per_packet",
            "ratio_requests_per_sec_to_forward_only", "ratio_cycles_to_rte_sched", "metrics_off_cycles_per_request_median",
            "metrics_on_cycles_per_request_median", "ratio_cycles_metrics_on_to_off_median", "metrics_slices"):
    t.check(r.get(key, 0) > 0, f"{key} reported ({r.get(key)})")
t.check(r.get("rejected") == 0, "no request rejected on the fairgate path")
t.check(abs(r["ratio_requests_per_sec_to_forward_only"] - r["requests_per_sec"] / r["forward_only_requests_per_sec"]) < 1e-3,
        "the ratio is computed from the same run")
# Two workers: the mesh carries requests to their queues' owners and answers
# back to their requests' workers, with nothing lost or rejected.
p = subprocess.run([t.BENCH, "dataplane", "--workers", "2", "--duration", "1s", "--flows", "2000", "--json"],
                   capture_output=True, text=True, timeout=120)
r = json.loads(p.stdout[p.stdout.index("{"):] if "{" in p.stdout else "{}")
t.check(p.returncode == 0 and r.get("workers") == 2 and r.get("requests_per_sec", 0) > 0,
        f"two workers run (rc={p.returncode}) {p.stderr.strip()[-300:]}")
t.check(r.get("handed_off", 0) > 0 and r.get("answers_forwarded", 0) > 0 and r.get("rejected") == 0,
        f"requests and answers cross between workers, none rejected ({r.get('handed_off')}, {r.get('answers_forwarded')})")
p = subprocess.run([t.BENCH, "dataplane", "--workers", "9"], capture_output=True, text=True, timeout=60)
t.check(p.returncode == 2 and "--workers 1..8" in p.stderr, "too many workers are refused with the reason")
t.finish()
