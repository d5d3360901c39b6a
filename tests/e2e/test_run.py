# SPDX-License-Identifier: Apache-2.0
"""`fairgate-bench run`: bad scenario files are refused naming the field; a
short scenario end to end writes every report file (PNGs of the documented
size, read from their IHDR); the baseline without fairness really is unfair
(the light flow's p99 is worse there); nothing is left behind (no process,
no network namespace), also after a failure (a backend port taken) and after
SIGINT mid-run; DPDK mode (a net_tap port in the run's own namespace) runs
both runs and removes its namespace, also after SIGINT."""
import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time

import fgtest as t

PLOT_W, PLOT_H = 1200, 700  # report.h FG_REPORT_PLOT_W/H, docs/bench.md
PLOTS = ["throughput", "latency-over-time", "latency-cdf", "seats", "rejects", "fairness", "backends"]
work = tempfile.mkdtemp(prefix="fg-run-test-")


def scenario(text, name="s.yaml"):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(path, out, timeout=120, **kw):
    return subprocess.run([t.BENCH, "run", path, "--out", out], capture_output=True, text=True, timeout=timeout, **kw)


def leftovers(runner_pid, ports):
    """Processes the runner started that still live: fairgate by its control
    socket's name, backends and loadgens by their loopback ports."""
    marks = [f"/tmp/fgrun-{runner_pid}-"] + [f"127.0.0.1:{p}" for p in ports]
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(m in cmd for m in marks):
            found.append(f"{pid}: {cmd}")
    return found


def ports_in_logs(out):
    ports = set()
    logs = os.path.join(out, "logs")
    for name in os.listdir(logs) if os.path.isdir(logs) else []:
        for word in open(os.path.join(logs, name), errors="replace").read().split():
            if word.startswith("127.0.0.1:"):
                p = word.split(":")[1].rstrip(",")
                if p.isdigit():
                    ports.add(int(p))
    return ports


def netns():
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


BASE = """name: bad
duration: 5s
backends: {count: 1, capacity: 4, serviceTime: 10ms}
flows:
  - {name: a, threads: 2}
"""

# --- parsing: every error names the field's path --------------------------
bad = [
    (BASE.replace("threads: 2", "threads: -1"), "flows[0].threads"),
    (BASE.replace("serviceTime: 10ms", "serviceTime: 10ms, distribution: weird"), "backends.distribution"),
    (BASE.replace("{name: a, threads: 2}", "{name: a, colour: red, threads: 2}"), "flows[0].colour"),
    (BASE.replace("duration: 5s", "duration: soon"), "duration"),
    (BASE.replace("{name: a, threads: 2}", "{name: a, threads: 2, service: 5ms}"), "flows[0].service"),
    (BASE.replace("{name: a, threads: 2}", "{name: a, threads: 2, rate: 5}"), "flows[0].threads"),
    (BASE + "  - {name: a, threads: 1}\n", "flows[1].name"),
    (BASE.replace("{name: a, threads: 2}", "{name: a, phases: [{start: 0s, stop: 3s, threads: 1},"
                  " {start: 2s, stop: 4s, rate: 10}]}"), "flows[0].phases[1].start"),
    (BASE + "events:\n  - {at: 1s, action: kill, backend: 3}\n", "events[0].backend"),
    (BASE + "events:\n  - {at: 9s, action: kill, backend: 0}\n", "events[0].at"),
    (BASE + "fairgate:\n  objects: [{kind: FlowSchema, apiVersion: flowcontrol.apiserver.k8s.io/v1, "
     "metadata: {name: x}, spec: {}}]\n", "fairgate.objects"),
    (BASE + "fairgate:\n  settings: {listen: 127.0.0.1:1}\n", "fairgate.settings.listen"),
]
for text, field in bad:
    r = run(scenario(text), os.path.join(work, "never"))
    t.check(r.returncode == 2 and f": {field}" in r.stderr and not os.path.exists(os.path.join(work, "never")),
            f"a bad {field} is refused naming it: {r.stderr.strip()[-160:]}")

# --- a short scenario end to end ---------------------------------------------
good = scenario("""name: short
description: a flood and a light flow on 4 seats
duration: 5s
timeout: 2s
settle: 1s
expect: {p99ServiceTimes: {light: 1000}}
backends: {count: 1, capacity: 4, serviceTime: 20ms}
fairgate:
  settings: {serverConcurrencyLimit: 4, borrowingPeriod: 1s}
flows:
  - {name: heavy, user: heavy, groups: [system:authenticated], threads: 60}
  - {name: light, user: light, groups: [system:authenticated], threads: 1}
events:
  - {at: 4500ms, action: set-backend, backend: 0, serviceTime: 25ms, capacity: 5}
""", "short.yaml")
out = os.path.join(work, "report")
p = subprocess.Popen([t.BENCH, "run", good, "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
stdout, stderr = p.communicate(timeout=120)
t.check(p.returncode == 0, f"the run succeeds (exit {p.returncode}; {stderr.strip()[-300:]})")
t.check("light: p99" in stdout and "report: " + out in stdout, f"verdicts and the report's path printed: {stdout.strip()}")
t.check("phase 1/2" in stderr and "phase 2/2" in stderr and "requests/s" in stderr and "responses/s" in stderr, "progress shown while it runs")
rep = json.load(open(os.path.join(out, "report.json")))
t.check(rep["scenario"] == "short" and [r["name"] for r in rep["runs"]] == ["fairgate", "baseline"],
        "report.json: the scenario and its two runs")
flows = {(r["name"], f["name"]): f for r in rep["runs"] for f in r["flows"]}
keys = {"name", "sent", "responses", "responsesPerSec", "rejected", "latencyMs", "fairShareError"}
t.check(all(keys <= set(f) and {"p50", "p90", "p99", "p999"} <= set(f["latencyMs"]) for f in flows.values()),
        "every flow has the documented keys")
t.check(all("jain" in r for r in rep["runs"]), "every run has Jain's index")
# The backends' side, the settle time and the expectation (issue 29).
for r in rep["runs"]:
    b = r["series"]["backends"]
    t.check(len(b["realCapacity"]) == 50 and b["realCapacity"][0] == 4 and b["realCapacity"][-1] == 5 and
            any(x == 4 for x in b["limitInForce"] if x is not None),
            f"{r['name']}: real capacity 4 then 5 (set-backend at 4.5 s), the limit in force sampled")
    t.check(r["limitTracking"] is None and 0 < r["backendUtilisation"]["value"] <= 1.2 and
            r["backendUtilisation"]["fromSeconds"] == 1.0, f"{r['name']}: Static: no limit tracking; a utilisation")
t.check(rep["settleSeconds"] == 1.0 and len(rep["verdictsAfterSettle"]) == 2 and
        all(f["latencyMsAfterSettle"]["p99"] > 0 for f in flows.values()), "verdicts and latency after the settle time")
t.check([(e["run"], e["expect"], e["met"]) for e in rep["expectations"]] ==
        [("fairgate", "p99ServiceTimes", True), ("baseline", "p99ServiceTimes", True)] and
        "expect fairgate: light p99 after 1.0 s" in stdout, f"the expectation checked in both runs: {rep['expectations']}")
t.check(all(f["responses"] > 0 for f in flows.values()), "every flow got answers in both runs")
light, light_base = flows[("fairgate", "light")], flows[("baseline", "light")]
t.check(light_base["latencyMs"]["p99"] > 2 * light["latencyMs"]["p99"],
        f"the baseline is unfair: the light flow's p99 {light_base['latencyMs']['p99']:.1f} ms there vs "
        f"{light['latencyMs']['p99']:.1f} ms with fairgate")
t.check(rep["runs"][0]["jain"] > rep["runs"][1]["jain"],
        f"Jain's index higher with fairgate ({rep['runs'][0]['jain']:.2f} vs {rep['runs'][1]['jain']:.2f})")
t.check(len(rep["runs"][0]["series"]["t"]) == 50 and
        len(rep["runs"][0]["flows"][0]["series"]["responsesPerSec"]) == 50, "time series of 50 bins of 100 ms")
t.check(os.path.getsize(os.path.join(out, "report.md")) > 0 and
        all(f"plots/{n}.png" in open(os.path.join(out, "report.md")).read() for n in PLOTS),
        "report.md embeds every plot")
want = sorted(f"plots/{n}.{e}" for n in PLOTS for e in ("png", "svg"))
t.check(sorted(rep["plots"]) == want, "report.json lists every plot")
for n in PLOTS:
    with open(os.path.join(out, "plots", n + ".png"), "rb") as f:
        head = f.read(24)
    ok = head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    w, h = struct.unpack(">II", head[16:24]) if ok else (0, 0)
    t.check(ok and (w, h) == (PLOT_W, PLOT_H), f"{n}.png is a PNG of {PLOT_W}x{PLOT_H} ({w}x{h})")
    svg = open(os.path.join(out, "plots", n + ".svg")).read(4096)
    t.check("<svg" in svg, f"{n}.svg is an SVG")
t.check(leftovers(p.pid, ports_in_logs(out)) == [], "nothing left running after the run")
blog = "".join(open(os.path.join(out, "logs", n), errors="replace").read()
               for n in os.listdir(os.path.join(out, "logs")) if "backend-0.log" in n)
t.check(blog.count("service time 25000 us, 5 workers taking requests") == 2,
        "set-backend reached the backend live, in both runs")

# --- the backend's --control file: hostile content changes nothing ------------
ctl_path = os.path.join(work, "backend.control")
ctl_log = open(os.path.join(work, "backend-control.log"), "w+")
bk = subprocess.Popen([t.BENCH, "backend", "--listen", f"127.0.0.1:{t.free_port()}", "--workers", "2",
                       "--control", ctl_path, "--duration", "20s"], stderr=ctl_log)
time.sleep(0.3)
bad = ["capacity=0", "capacity=5000", "capacity=3x", "serviceTime=61s", "serviceTime=-1s", "serviceTime=soon",
       "workers=3", "", "capacity=" + "9" * 300, "x" * 100000]
for text in bad + ["serviceTime=7ms capacity=3"]:
    with open(ctl_path, "w") as f:
        f.write(text + "\n")
    bk.send_signal(signal.SIGHUP)
    time.sleep(0.08)
os.remove(ctl_path)
bk.send_signal(signal.SIGHUP)  # the file gone: said, nothing changed
time.sleep(0.08)
t.check(bk.poll() is None, "the backend survives every bad control file")
bk.send_signal(signal.SIGTERM)
bk.wait(timeout=10)
ctl_log.seek(0)
said = ctl_log.read()
t.check(said.count("nothing changed") == len(bad) + 1 and said.count("taking requests") == 1 and
        "service time 7000 us, 3 workers taking requests" in said,
        f"each bad control file refused with a reason, the good one taken ({said.count('nothing changed')} refusals)")

# --- a failure: a backend's port taken ---------------------------------------
held = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
held.bind(("127.0.0.1", 0))
port = held.getsockname()[1]
taken = scenario(BASE.replace("serviceTime: 10ms", f"serviceTime: 10ms, ports: [{port}]"), "taken.yaml")
out2 = os.path.join(work, "taken")
p = subprocess.Popen([t.BENCH, "run", taken, "--out", out2], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
_, stderr = p.communicate(timeout=60)
t.check(p.returncode == 1 and f"127.0.0.1:{port}" in stderr, f"a taken backend port fails the run naming it "
        f"(exit {p.returncode}; {stderr.strip()[-200:]})")
t.check(leftovers(p.pid, ports_in_logs(out2) - {port}) == [], "nothing left running after the failure")
held.close()

# --- SIGINT mid-run -------------------------------------------------------------
out3 = os.path.join(work, "interrupted")
p = subprocess.Popen([t.BENCH, "run", good, "--out", out3], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
deadline = time.time() + 20
log = os.path.join(out3, "logs", "fairgate-loadgen-heavy-0.log")
while time.time() < deadline and not os.path.exists(log):
    time.sleep(0.1)
time.sleep(1)
p.send_signal(signal.SIGINT)
_, stderr = p.communicate(timeout=30)
t.check(p.returncode == 130 and "interrupted" in stderr, f"SIGINT stops the run (exit {p.returncode})")
t.check(leftovers(p.pid, ports_in_logs(out3)) == [], "nothing left running after SIGINT")

# --- DPDK mode: a net_tap port in a namespace the runner creates and removes --
if os.path.exists("/dev/net/tun"):
    dpdk = scenario(open(good).read().replace("duration: 5s", "duration: 3s").replace("threads: 60", "threads: 30")
                    .replace("at: 4500ms", "at: 2500ms"),
                    "dpdk.yaml")
    out4 = os.path.join(work, "dpdk")
    p = subprocess.Popen([t.BENCH, "run", dpdk, "--io", "dpdk", "--out", out4], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    seen = False
    while time.time() < deadline and p.poll() is None and not seen:
        seen = f"fgrun-{p.pid}-fairgate" in netns()
        time.sleep(0.1)
    stdout, stderr = p.communicate(timeout=120)
    rep = json.load(open(os.path.join(out4, "report.json"))) if p.returncode == 0 else {"runs": []}
    t.check(p.returncode == 0 and seen and all(f["responses"] > 0 for r in rep["runs"] for f in r["flows"]),
            f"DPDK mode: the run's namespace existed, every flow got answers in both runs (exit {p.returncode}; "
            f"{stderr.strip()[-300:]})")
    t.check("io=dpdk" in open(os.path.join(out4, "logs", "fairgate-fairgate.log")).read(), "fairgate ran in DPDK mode")
    t.check(f"fgrun-{p.pid}-" not in netns() and leftovers(p.pid, []) == [], "DPDK mode: namespace and processes gone")
    # Interrupted while fairgate runs in its namespace.
    p = subprocess.Popen([t.BENCH, "run", dpdk, "--io", "dpdk", "--out", os.path.join(work, "dpdk-int")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline and not os.path.exists(os.path.join(work, "dpdk-int", "logs",
                                                                      "fairgate-loadgen-heavy-0.log")):
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=30)
    t.check(p.returncode == 130 and f"fgrun-{p.pid}-" not in netns() and leftovers(p.pid, []) == [],
            f"DPDK mode, SIGINT: exit 130, namespace and processes gone (exit {p.returncode})")
else:
    print("skip DPDK mode: no /dev/net/tun")
t.check(not [n for n in netns().split() if n.startswith("fgrun-")], "no network namespace of the runner left behind")
subprocess.run(["rm", "-rf", work])
t.finish()
