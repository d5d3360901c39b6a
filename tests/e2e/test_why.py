# SPDX-License-Identifier: Apache-2.0
"""Why was I rejected: rejects by reason per flow and per level in status;
`fairgatectl status --level --flow --sort --top` with whole names and bad
values refused; `explain` with the level's type and state, and `--why`
naming the rule part of each schema ahead that did not match.  Every wait is
bounded."""
import json
import os
import subprocess
import tempfile

import fgtest as t

LONG_USER = "tenant-with-a-rather-long-name-that-must-not-be-cut-" + "x" * 30

b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=8)
d = t.Daemon([b], ["--seat-limit", "2"], level=dict(qll=2))
ctl = [t.FAIRGATECTL, "--socket", d.sock]

res = t.loadgen(d.addr, [f"name=heavy,user={LONG_USER},threads=20,service=20ms", "name=light,user=light,threads=1,service=1ms"],
                duration="2s", timeout="5s")
st = d.wait_idle()
heavy = res["heavy"]
t.check(heavy["rejected"].get("queue-full", 0) > 0, f"the heavy flow got queue-full ({heavy['rejected']})")

# status: rejects by reason per flow and per level, as the client saw them.
flows = [f for f in st["flows"] if f["flow"].endswith(LONG_USER)]
by = {}
for f in flows:
    for k, v in f.get("rejectedBy", {}).items():
        by[k] = by.get(k, 0) + v
t.check(flows and by == {k: v for k, v in heavy["rejected"].items() if v},
        f"status: the heavy flow's rejects by reason = the client's ({by} vs {heavy['rejected']})")
lv = t.level_of(st)
t.check(lv.get("rejectedBy", {}).get("queue-full") == sum(r["rejected"].get("queue-full", 0) for r in res.values()),
        f"status: the level's rejects by reason ({lv.get('rejectedBy')})")

# The table: filters, sort, top, whole names.
p = subprocess.run(ctl + ["status", "--level", t.TEST_LEVEL, "--sort", "rejected", "--top", "1"],
                   capture_output=True, text=True, timeout=30)
rows = p.stdout.split("FLOW")[1].split("\n\n")[0].splitlines()[1:] if "FLOW" in p.stdout else []
t.check(p.returncode == 0 and len(rows) == 1 and LONG_USER in rows[0] and "queue-full=" in rows[0],
        f"status --level --sort rejected --top 1: the heavy flow, its name whole, its reasons ({rows})")
p = subprocess.run(ctl + ["status", "--flow", "light"], capture_output=True, text=True, timeout=30)
t.check(p.returncode == 0 and LONG_USER not in p.stdout.split("FLOW")[1] and "/light" in p.stdout,
        "status --flow light: only the matching flows")
for bad, word in ((["--sort", "size"], "--sort"), (["--top", "0"], "--top"), (["--top", "x"], "--top"),
                  (["--watch", "abc"], "--watch"), (["--count", "-1"], "--count"), (["stray"], "unexpected"),
                  (["-o", "yaml"], "-o")):
    p = subprocess.run(ctl + ["status"] + bad, capture_output=True, text=True, timeout=30)
    t.check(p.returncode == 2 and word in p.stderr, f"status {' '.join(bad)}: exit 2 naming {word} ({p.stderr.strip()})")

# explain: the level's type and state on the daemon.
p = subprocess.run(ctl + ["explain", "--user", "light", "--group", "system:authenticated", "-o", "json"],
                   capture_output=True, text=True, timeout=30)
e = json.loads(p.stdout) if p.returncode == 0 else {}
state = e.get("priorityLevelState", {})
t.check(e.get("priorityLevel") == t.TEST_LEVEL and e.get("priorityLevelType") == "Limited (Queue)" and
        state.get("seatLimit") == 2 and state.get("rejectedBy", {}).get("queue-full", 0) > 0,
        f"explain: the level's type and state ({e})")

# explain --why, offline on a file: a namespaced-only schema ahead of the match.
cfg = """apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: tenants-pl}
spec: {type: Limited, limited: {nominalConcurrencyShares: 10, limitResponse: {type: Reject}}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: tenants}
spec:
  priorityLevelConfiguration: {name: tenants-pl}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: Group, group: {name: "system:authenticated"}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"]}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: admins-only}
spec:
  priorityLevelConfiguration: {name: tenants-pl}
  matchingPrecedence: 50
  rules:
  - subjects: [{kind: User, user: {name: root}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true}]
"""
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write(cfg)
try:
    p = subprocess.run([t.FAIRGATECTL, "explain", "-f", f.name, "--user", "bob", "--group", "system:authenticated",
                        "--resource", "nodes", "--why", "-o", "json"], capture_output=True, text=True, timeout=30)
    e = json.loads(p.stdout) if p.returncode == 0 else {}
    why = {w["flowSchema"]: w["reason"] for w in e.get("why", [])}
    t.check(why.get("tenants") == "request has no namespace and the rule lacks clusterScope",
            f"--why: tenants needs a namespace ({why.get('tenants')})")
    t.check(why.get("admins-only", "").startswith('no subject matches user "bob"'),
            f"--why: admins-only wants another user ({why.get('admins-only')})")
    t.check(list(why) == ["exempt", "admins-only", "tenants"],
            f"--why: the schemas ahead, in matching order, the mandatory exempt first ({list(why)})")
    p = subprocess.run([t.FAIRGATECTL, "explain", "-f", f.name, "--user", "bob", "--group", "system:authenticated",
                        "--resource", "nodes", "--why"], capture_output=True, text=True, timeout=30)
    t.check(p.returncode == 0 and "tenants (tenants-pl): request has no namespace" in p.stdout,
            f"--why as a table ({p.stdout.strip()[-200:]})")
finally:
    os.unlink(f.name)
# The CLI's own mistakes: its version, an unknown option, a daemon it cannot reach and why.
p = subprocess.run([t.FAIRGATECTL, "--version"], capture_output=True, text=True, timeout=30)
t.check(p.returncode == 0 and p.stdout.startswith("fairgatectl "), f"fairgatectl --version ({p.stdout.strip()})")
p = subprocess.run([t.FAIRGATECTL, "--bogus", "status"], capture_output=True, text=True, timeout=30)
t.check(p.returncode == 2 and '"--bogus"' in p.stderr, "an unknown global option is named, exit 2")
p = subprocess.run([t.FAIRGATECTL, "--socket", "/nonexistent.sock", "status"], capture_output=True, text=True, timeout=30)
t.check(p.returncode == 1 and "FAIRGATE_SOCKET" in p.stderr, f"unreachable: the hint names --socket/FAIRGATE_SOCKET ({p.stderr.strip()})")
if os.geteuid() == 0:
    # A peer that may not connect is told the socket's mode and owner.
    p = subprocess.run([t.executable_for_other_uid(t.FAIRGATECTL), "--socket", d.sock, "status"], capture_output=True,
                       text=True, timeout=30, preexec_fn=lambda: (os.setgroups([]), os.setgid(65534), os.setuid(65534)))
    mode = os.stat(d.sock).st_mode & 0o7777
    if mode & 0o006:
        print(f"SKIP the permission hint: the socket is open to everyone (mode {mode:03o})")
    else:
        t.check(p.returncode == 1 and "permission denied" in p.stderr and "controlSocketGroup" in p.stderr,
                f"no permission: the hint shows the socket's mode and owner ({p.stderr.strip()})")
# Inputs that say nothing or are not files, unknown kinds and formats: refused, named.
empty = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
empty.write("# nothing here\n---\n\n")
empty.close()
try:
    for args, rc, want in ((["apply", "-f", empty.name], 1, "empty input"), (["validate", "-f", empty.name], 1, "empty input"),
                           (["apply", "-f", "/tmp"], 1, "is a directory"), (["get", "foo"], 2, 'unknown kind "foo"'),
                           (["get", "fs", "-o", "xml"], 2, 'unknown output format "xml"')):
        p = subprocess.run(ctl + args, capture_output=True, text=True, timeout=30)
        t.check(p.returncode == rc and want in p.stderr, f"fairgatectl {' '.join(args)}: exit {rc}, {want!r} ({p.stderr.strip()[:200]})")
    p = subprocess.run([t.FAIRGATE, "--config", empty.name, "--check"], capture_output=True, text=True, timeout=30)
    t.check(p.returncode == 2 and "empty input" in p.stderr, f"fairgate --config EMPTY: exit 2 ({p.stderr.strip()[:200]})")
finally:
    os.unlink(empty.name)
# The daemon refuses what it cannot honour, naming what it expects.
for args, want in ((["--listen", "[::1]:7400"], "IPv4 only"), (["--workers", "x"], "whole number in [1, 64]"),
                   (["--queue-wait", "15"], "duration"), (["--", "-l", "0"], "for --io dpdk only")):
    p = subprocess.run([t.FAIRGATE, "--check"] + args, capture_output=True, text=True, timeout=30)
    t.check(p.returncode == 2 and want in p.stderr, f"fairgate {' '.join(args)}: exit 2, {want!r} ({p.stderr.strip()[:200]})")
d.stop()
t.finish()
