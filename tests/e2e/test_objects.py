# SPDX-License-Identifier: Apache-2.0
"""Configuration objects on a running daemon, as an operator meets them:
`get` shows what is in force (mandatory objects included), deleting a
mandatory object restores its built-in copy and says so, a misspelled field
is a warning (an error with --strict), a schema whose level does not exist
is kept, reported as dangling everywhere and matches nothing, and a kubectl
dump of a cluster's objects validates and applies unchanged."""
import json
import os
import subprocess
import tempfile

import fgtest as t

HERE = os.path.dirname(os.path.abspath(__file__))
DUMP = os.path.join(HERE, "..", "conformance", "kubectl-dump.yaml")

b = f"127.0.0.1:{t.free_port()}"
t.backend(b)
d = t.Daemon([b], config=None)  # the embedded bootstrap objects


def ctl(*args):
    return subprocess.run([t.FAIRGATECTL, "--socket", d.sock] + list(args), capture_output=True, text=True,
                          timeout=10)


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
    f.write(text)
    f.close()
    return f.name


p = ctl("get", "plc", "catch-all", "-o", "json")
t.check(p.returncode == 0 and json.loads(p.stdout)["spec"]["limited"]["limitResponse"]["type"] == "Reject",
        "get plc catch-all shows the mandatory level in force")
p = ctl("get", "fs", "exempt", "-o", "json")
cond = json.loads(p.stdout)["status"]["conditions"][0] if p.returncode == 0 else {}
t.check(cond.get("type") == "Dangling" and cond.get("status") == "False" and cond.get("reason") == "Found",
        "get fs carries the Dangling condition (False for a schema whose level exists)")
gen = d.status()["configGeneration"]
p = ctl("delete", "plc", "exempt")
t.check(p.returncode == 0 and "restored the built-in copy of mandatory PriorityLevelConfiguration exempt" in p.stdout,
        f"delete plc exempt says the built-in copy was restored ({p.stdout.strip()})")
t.check(ctl("get", "plc", "exempt").returncode == 0, "the exempt level is still there")

typo = write("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n"
             "metadata: {name: tenants}\nspec:\n  type: Limited\n  limited:\n"
             "    limitResponse: {type: Queue, queueing: {queues: 16}, queuing: {queues: 16}}\n")
p = ctl("apply", "--strict", "-f", typo)
t.check(p.returncode == 1 and 'strict decoding error: unknown field "spec.limited.limitResponse.queueing"' in p.stderr
        and ctl("get", "plc", "tenants").returncode == 1, "--strict refuses a misspelled field and changes nothing")
p = ctl("apply", "-f", typo)
t.check(p.returncode == 0 and 'Warning: document 1 PriorityLevelConfiguration/tenants: unknown field '
        '"spec.limited.limitResponse.queueing"' in p.stderr, "without --strict a misspelled field is a warning")
q = json.loads(ctl("get", "plc", "tenants", "-o", "json").stdout)["spec"]["limited"]["limitResponse"]["queuing"]
t.check(q == {"queues": 16, "handSize": 8, "queueLengthLimit": 50}, f"v1 defaults filled in ({q})")

dangling = write("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: tenant-a}\n"
                 "spec:\n  matchingPrecedence: 500\n  priorityLevelConfiguration: {name: tenant}\n"
                 "  rules:\n  - subjects: [{kind: User, user: {name: alice}}]\n"
                 "    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*']}]\n")
p = ctl("apply", "-f", dangling)
t.check(p.returncode == 0 and 'FlowSchema/tenant-a: spec.priorityLevelConfiguration.name: PriorityLevelConfiguration '
        '"tenant" does not exist: the schema is Dangling' in p.stderr, "applying a dangling schema warns")
p = subprocess.run([t.FAIRGATECTL, "validate", "-f", dangling], capture_output=True, text=True, timeout=10)
t.check(p.returncode == 0 and "is Dangling" in p.stderr, "offline validate warns about it too")
rows = [line.split() for line in ctl("get", "fs").stdout.splitlines()]
t.check(["tenant-a", "tenant", "500", "<none>", "True"] in rows, "get fs shows it in the MISSINGPL column")
p = ctl("explain", "--user", "alice", "--namespace", "ns1", "--resource", "pods", "-o", "json")
t.check(p.returncode == 0 and json.loads(p.stdout)["flowSchema"] != "tenant-a", "a dangling schema matches nothing")
level = write("apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\nmetadata: {name: tenant}\n"
              "spec: {type: Limited, limited: {limitResponse: {type: Reject}}}\n")
p = ctl("apply", "-f", level)
t.check(p.returncode == 0 and "Dangling" not in p.stderr, "once its level exists the schema no longer dangles")
p = ctl("explain", "--user", "alice", "--namespace", "ns1", "--resource", "pods", "-o", "json")
t.check(p.returncode == 0 and json.loads(p.stdout)["flowSchema"] == "tenant-a", "and it matches")
p = ctl("delete", "plc", "tenant")
t.check(p.returncode == 0 and "FlowSchema/tenant-a" in p.stderr and "is Dangling" in p.stderr,
        "deleting a level warns about the schema it leaves dangling")

groups = []
for i in range(300):
    groups += ["--group", f"directory-group-{i}"]
p = ctl("explain", "--user", "bob", "--namespace", "ns1", "--resource", "pods", "-o", "json", *groups,
        "--group", "system:authenticated")
t.check(p.returncode == 0 and json.loads(p.stdout)["flowSchema"] == "global-default",
        "explain takes a user in 301 groups")

if os.path.exists(DUMP):
    p = subprocess.run([t.FAIRGATECTL, "validate", "--strict", "-f", DUMP], capture_output=True, text=True, timeout=10)
    t.check(p.returncode == 0 and "Warning" not in p.stderr, f"a kubectl dump validates strictly ({p.stderr[-300:]})")
    p = ctl("apply", "--strict", "-f", DUMP)
    t.check(p.returncode == 0, f"a kubectl dump applies unchanged ({p.stderr[-300:]})")
else:
    t.check(False, "tests/conformance/kubectl-dump.yaml exists")
for f in (typo, dangling, level):
    os.unlink(f)
# A mistyped delete says what is wrong before the usage line (issue 30).
for args, why in ((("foo", "bar"), 'unknown kind "foo"'), (("flowschema",), "a name is needed"),
                  (("flowschema", "a", "b"), "one object at a time")):
    p = ctl("delete", *args)
    t.check(p.returncode == 2 and why in p.stderr and "usage:" in p.stderr, f"delete {' '.join(args)}: {why}")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
