# SPDX-License-Identifier: Apache-2.0
"""The in-process DPDK harness runs here (ring-backed port, no hugepages, no
NIC), in both modes, and reports every figure the benchmark page uses.  Not
a timed test: it checks the numbers exist and are consistent, not how large
they are."""
import json
import os
import resource
import subprocess
import time

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
# Two workers: requests stay where they arrive, answers that arrive at the
# other worker go back to their request's, with nothing lost or rejected.
p = subprocess.run([t.BENCH, "dataplane", "--workers", "2", "--duration", "1s", "--flows", "2000", "--json"],
                   capture_output=True, text=True, timeout=120)
r = json.loads(p.stdout[p.stdout.index("{"):] if "{" in p.stdout else "{}")
t.check(p.returncode == 0 and r.get("workers") == 2 and r.get("requests_per_sec", 0) > 0,
        f"two workers run (rc={p.returncode}) {p.stderr.strip()[-300:]}")
t.check("handed_off" not in r and r.get("answers_forwarded", 0) > 0 and r.get("rejected") == 0,
        f"answers cross between workers, requests do not, none rejected ({r.get('answers_forwarded')})")
# The scaling mode's short form: both worker counts run and complete every
# request (a run that loses one fails), answers cross between the two
# workers (requests never do), steering answers to their owner leaves none to
# forward, and the independent pair shares nothing.  Not timed.
per_worker = 20000
p = subprocess.run([t.BENCH, "dataplane", "--mode", "scaling", "--workers", "1,2", "--requests", str(per_worker),
                    "--window", "512", "--runs", "1", "--flows", "2000", "--json"],
                   capture_output=True, text=True, timeout=180)
t.check(p.returncode == 0, f"the scaling mode runs (rc={p.returncode}) {p.stderr.strip()[-300:]}")
r = json.loads(p.stdout[p.stdout.index("{"):] if "{" in p.stdout else "{}")
series = {(s["workers"], s["kind"]): s for s in r.get("series", [])}
t.check(set(series) == {(1, "mesh"), (2, "mesh"), (2, "answers_to_owner"), (2, "independent")},
        f"one worker, two, two with answers to their owner, two independent ({sorted(series)})")
for key, s in series.items():
    t.check(s["requests"] == per_worker * key[0] and s["rejected"] == 0 and s["requests_per_sec_median"] > 0,
            f"{key}: every request completed, none rejected ({s['requests']}, {s['rejected']})")
two, owner, alone = series.get((2, "mesh"), {}), series.get((2, "answers_to_owner"), {}), series.get((2, "independent"), {})
t.check(two.get("answers_crossing_share_median", 0) > 0 and "requests_crossing_share_median" not in two,
        f"two workers pass answers over, never requests ({two.get('answers_crossing_share_median')})")
t.check(owner.get("answers_crossing_share_median", 1) == 0,
        "answers steered to their owner are never forwarded")
t.check(alone.get("answers_crossing_share_median", 1) == 0,
        "independent one-worker dataplanes hand nothing over")
p = subprocess.run([t.BENCH, "dataplane", "--mode", "scaling", "--flows", "1001"], capture_output=True, text=True,
                   timeout=60)
t.check(p.returncode == 2 and "a multiple of every worker count" in p.stderr,
        "flows that do not split over the workers are refused with the reason")
p = subprocess.run([t.BENCH, "dataplane", "--workers", "9"], capture_output=True, text=True, timeout=60)
t.check(p.returncode == 2 and "--workers 1..8" in p.stderr, "too many workers are refused with the reason")

# --repeat: the runs' min, median and max, in one process; --workers 4 starts
# on this 2-CPU machine (its EAL memory grows with the workers).
p = subprocess.run([t.BENCH, "dataplane", "--workers", "4", "--repeat", "2", "--duration", "1s", "--flows", "2000",
                    "--json"], capture_output=True, text=True, timeout=180)
r = json.loads(p.stdout[p.stdout.index("{"):] if "{" in p.stdout else "{}")
t.check(p.returncode == 0 and r.get("workers") == 4 and r.get("repeat") == 2,
        f"--workers 4 --repeat 2 runs (rc={p.returncode}) {p.stderr.strip()[-300:]}")
for key in ("requests_per_sec", "cycles_per_request", "forward_only_requests_per_sec",
            "forward_only_cycles_per_request", "ratio_requests_per_sec_to_forward_only"):
    lo, mid, hi = (r.get(f"{key}_{s}", 0) for s in ("min", "median", "max"))
    t.check(0 < lo <= mid <= hi, f"{key}: min <= median <= max ({lo}, {mid}, {hi})")
t.check(r.get("requests_per_sec_min", 0) <= r.get("requests_per_sec", 0) <= r.get("requests_per_sec_max", 0),
        "the single-run figure is one of the runs")

# Cannot start (EAL's memory refused: an address-space limit): what it needs,
# EAL's last lines instead of its log, exit 1, nothing under /var/run/dpdk.
# An AddressSanitizer build reserves terabytes of shadow address space at
# start, so under any such limit it fails before EAL runs: not this check.
sanitized = "libasan" in subprocess.run(["ldd", t.BENCH], capture_output=True, text=True).stdout
if sanitized:
    print("skip a start that fails says what it needs (an AddressSanitizer build cannot run under RLIMIT_AS)")
else:
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (700 << 20, 700 << 20))
    p = subprocess.Popen([t.BENCH, "dataplane", "--duration", "1s", "--flows", "2000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    out, err = p.communicate(timeout=60)
    t.check(p.returncode == 1 and "needs: 2 lcores" in err and "1024 MB of memory" in err and "EAL said" in err
            and len(err.strip().splitlines()) <= 10, f"a start that fails says what it needs ({err.strip()})")
    t.check(not os.path.exists(f"/var/run/dpdk/fgbench{p.pid}"), "nothing left under /var/run/dpdk after it")

# Killed while it runs (EAL up: its lcore threads exist): nothing left either.
p = subprocess.Popen([t.BENCH, "dataplane", "--duration", "3s", "--flows", "2000"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
deadline = time.time() + 20
while time.time() < deadline and len(os.listdir(f"/proc/{p.pid}/task")) < 3:
    time.sleep(0.05)
up = len(os.listdir(f"/proc/{p.pid}/task")) >= 3
time.sleep(0.5)
p.kill()
p.wait(timeout=10)
t.check(up and not os.path.exists(f"/var/run/dpdk/fgbench{p.pid}"),
        f"a run killed after EAL started (threads seen: {up}) leaves no runtime directory")
t.finish()
