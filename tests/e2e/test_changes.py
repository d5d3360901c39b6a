# SPDX-License-Identifier: Apache-2.0
"""One meaning for a configuration, and safe changes (issue 12): a file is the
whole configuration for `fairgate --config`, `validate` and `apply --prune`,
and `apply -f` merges it into the live set and says so; `validate --base`
predicts what `apply` produces; dry runs and `diff` show per object what
changes and every level's seat limits before -> after; a no-op apply keeps
the generation; the live set exports whole (objects and settings) to a file
that applies back unchanged and starts a daemon with the same levels;
`delete -f`, `history` and `rollback` work; the backends' capacity is checked
at start-up, with --check and in status."""
import json
import os
import re
import subprocess
import tempfile

import fgtest as t

b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=8)
d = t.Daemon([b], config=None)  # the bootstrap objects, as a new operator starts


def ctl(*args, sock=None):
    return subprocess.run([t.FAIRGATECTL, "--socket", sock or d.sock] + list(args), capture_output=True, text=True,
                          timeout=20)


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


def limit_after(out, level):
    """The nominal limit after the change, from a seat-limits table row."""
    m = re.search(rf"^  {re.escape(level)}\s+(?:\S+ -> )?(\d+)\s", out, re.M)
    return int(m.group(1)) if m else None


def gen():
    return d.status()["configGeneration"]


F = write(t.level_config())

# --- one meaning: validate says which, and --base predicts apply -----------------
whole = ctl("validate", "-f", F)
m = re.search(r"^  tests\s+nominal\s+(\d+)", whole.stdout, re.M)
t.check(whole.returncode == 0 and m and "the whole configuration" in whole.stdout,
        f"validate -f: the file as the whole configuration, and says so ({whole.stdout[-200:]})")
alone = int(m.group(1)) if m else -1
live = ctl("validate", "-f", F, "--base", "live")
boot = ctl("validate", "-f", F, "--base", "bootstrap")
merged = limit_after(live.stdout, "tests")
t.check(live.returncode == 0 and "onto the live set" in live.stdout and merged and merged < alone,
        f"validate --base live: the merged result ({merged} seats) differs from the file alone ({alone})")
t.check(boot.returncode == 0 and limit_after(boot.stdout, "tests") == merged,
        "validate --base bootstrap predicts the same for a daemon started without --config")
basefile = write(t.level_config(queues=8, hand=2))
p = ctl("validate", "-f", F, "--base", basefile)
t.check(p.returncode == 0 and "tests configured" in p.stdout.replace(
    "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/", "") and limit_after(p.stdout, "tests") == alone,
        f"validate --base FILE: applied onto that file's configuration ({p.stdout[:300]})")

# --- dry run and diff: nothing changes -------------------------------------------
g0 = gen()
p = ctl("apply", "--dry-run", "-f", F)
t.check(p.returncode == 0 and "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/tests created (dry run)"
        in p.stdout and "global-default" in p.stdout and gen() == g0 and ctl("get", "plc", "tests").returncode == 1,
        "apply --dry-run: per object and every level's limits, nothing changed")
p = ctl("diff", "-f", F)
t.check(p.returncode == 1 and "flowschema.flowcontrol.apiserver.k8s.io/everyone created" in p.stdout
        and re.search(r"^  global-default\s+49 -> \d+", p.stdout, re.M), "diff -f: exit 1 and what would change")

# --- apply: what it did, the merge said, a no-op keeps the generation -------------
p = ctl("apply", "-f", F)
t.check(p.returncode == 0 and "tests created" in p.stdout and "everyone created" in p.stdout
        and f"(configuration generation {g0 + 1})" in p.stdout, f"apply prints per object ({p.stdout[-200:]})")
t.check("not in this input" in p.stderr and "apply --prune" in p.stderr,
        "apply warns that the merge keeps objects the file does not hold")
st = d.status()
# The nominal limit: borrowing then moves the current one (borrowing.md); the
# borrower reports a new level from its first round after the change.
st = d.wait_status(lambda x: "borrowing" in t.level_of(x), timeout=5)
nominal = t.level_of(st).get("borrowing", {}).get("nominal")
t.check(nominal == merged, f"validate --base live predicted apply's nominal limit ({merged} vs {nominal})")
p = ctl("apply", "-f", F)
t.check(p.returncode == 0 and "tests unchanged" in p.stdout and "nothing to publish" in p.stdout and gen() == g0 + 1,
        "a no-op apply does not bump the generation")
p = ctl("diff", "-f", F)
t.check(p.returncode == 0 and "no differences" in p.stdout, "diff -f after apply: exit 0")
p = ctl("apply", "-f", F, "-f", F)
t.check(p.returncode == 2 and "one -f at a time" in p.stderr and gen() == g0 + 1, "two -f: refused, not half applied")
p = ctl("apply", "-f", F, "--dry-run=maybe")
t.check(p.returncode == 2 and "--dry-run must be server, client or none" in p.stderr, "a bad --dry-run value is named")
p = ctl("apply", "-f", write(t.level_config(queues=32)))
t.check(p.returncode == 0 and "tests configured" in p.stdout and "spec.limited.limitResponse.queuing.queues: 64 -> 32"
        in p.stdout, "a changed field is named with old -> new")

# --- export whole, apply back, restart with it ---------------------------------------
p = ctl("get", "all", "-o", "yaml")
exported = write(p.stdout)
t.check(p.returncode == 0 and "kind: \"FairgateSettings\"" in p.stdout and "name: \"tests\"" in p.stdout,
        "get all -o yaml exports objects and settings")
g1 = gen()
p = ctl("apply", "--prune", "-f", exported)
t.check(p.returncode == 0 and gen() == g1 and "pruned" not in p.stdout,
        f"the export applies back (--prune) unchanged ({p.stdout[-200:]}{p.stderr[-200:]})")
p = ctl("get", "settings", "-o", "json")
t.check(p.returncode == 0 and json.loads(p.stdout)["spec"]["configHistory"] == 10, "get settings")
with open(exported) as f:
    d2 = t.Daemon([b], config=f.read())
levels = lambda st: sorted((l["name"], l["seatLimit"]) for l in st["priorityLevels"])
t.check(levels(d2.status()) == levels(d.status()), "restarted with the export: the same levels and limits")
d2.stop()

# --- prune: the live set becomes the file, as --config reads it ---------------------
p = ctl("apply", "--prune", "-f", F)
t.check(p.returncode == 0 and "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/workload-low pruned" in p.stdout
        and t.level_of(d.status())["seatLimit"] == alone,
        f"apply --prune: bootstrap objects pruned, the level has what validate -f predicted ({alone})")
t.check(ctl("get", "plc", "exempt").returncode == 0 and ctl("get", "fs", "catch-all").returncode == 0,
        "mandatory objects stay")

# --- delete -f --------------------------------------------------------------------
extra = write("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: everyone}\n---\n"
              "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: nosuch}\n")
p = ctl("delete", "-f", extra)
t.check(p.returncode == 1 and "flowschema.flowcontrol.apiserver.k8s.io/everyone deleted" in p.stdout
        and '"nosuch" not found' in p.stderr and ctl("get", "fs", "everyone").returncode == 1,
        "delete -f: deletes what exists, names what does not (exit 1)")
p = ctl("delete", "-f", extra, "--ignore-not-found")
t.check(p.returncode == 0 and "(unchanged)" in p.stdout, "delete -f --ignore-not-found: nothing left to delete")

# --- history and rollback ---------------------------------------------------------------
p = ctl("history")
rows = [l for l in p.stdout.splitlines()[1:] if l.strip()]
t.check(p.returncode == 0 and rows[0].split()[2] == "-" and "start-up" in rows[0]
        and rows[-1].split()[2] == str(os.getuid()) and "delete -f: 1 deleted" in rows[-1] and "(in force)" in rows[-1],
        f"history: time, uid and summary per generation ({p.stdout[-300:]})")
g2 = gen()
p = ctl("rollback")
t.check(p.returncode == 0 and f"configuration generation {g2 + 1}" in p.stdout
        and ctl("get", "fs", "everyone").returncode == 0, "rollback: the previous generation, as a new one")
p = ctl("rollback", "--to", "1")
t.check(p.returncode == 0 and ctl("get", "plc", "tests").returncode == 1 and ctl("get", "plc", "workload-low").returncode == 0,
        "rollback --to 1: the start-up configuration")
p = ctl("rollback", "--to", "999")
t.check(p.returncode == 1 and "generation 999 is not kept" in p.stderr, "rollback to a generation not kept: said")
p = ctl("rollback", "--to", "abc")
t.check(p.returncode == 2 and "--to must be a generation number" in p.stderr, "rollback --to abc: refused")

# --- capacity sanity ---------------------------------------------------------------------
st = d.status()
t.check(any("no capacity" in w for w in st.get("warnings", [])), "status: backends without capacity are a warning")
p = subprocess.run([t.FAIRGATE, "--check", "--backend", b + ",seats=10"], capture_output=True, text=True, timeout=10)
t.check(p.returncode == 0 and "sum to 10 seats, below serverConcurrencyLimit 600" in p.stderr,
        "fairgate --check: capacities below the server limit are a warning")
d.stop()
d = t.Daemon([b + ",seats=1"], ["--seat-limit", "4", "--workers", "1"])  # a 1-seat backend: one worker
p = ctl("apply", "-f", write("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\n"
                             "spec: {serverConcurrencyLimit: 8}\n"))
t.check(p.returncode == 0 and "sum to 1 seats, below serverConcurrencyLimit 8" in p.stderr,
        "apply: a changed server limit above the capacities is a warning")
t.loadgen(d.addr, ["name=a,user=a,threads=4,service=5ms"], duration="1s")
st = d.status()
t.check(st["counters"]["heldForBackend"] > 0 and any("waited for backend room" in w for w in st["warnings"]),
        "status: requests held for backend room are a warning")
p = ctl("status")
t.check("Warning: counters.heldForBackend" in p.stdout, "the status table prints the warnings")
d.stop()
t.finish()
