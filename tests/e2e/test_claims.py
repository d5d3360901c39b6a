# SPDX-License-Identifier: Apache-2.0
"""The trust rule (issue 26, docs/security.md §2): nothing an untrusted
source claims takes its requests to an Exempt level that its identity alone
would not reach.  On the embedded bootstrap configuration, plus one schema
to the exempt level per claimable attribute (verb, API group, resource,
namespace), an untrusted load generator floods each claim (and the
bootstrap `probes` path, `get /healthz`), and every request lands in
global-default, the level of `system:anonymous`; the same claim from a
trusted source does reach exempt (the control: the claims themselves work).
Hints: an untrusted flood claiming 10-seat LISTs takes one seat per request.
Also checked: `fairgatectl explain --untrusted --why` names the rule."""
import os
import socket
import subprocess
import time

import fgtest as t

TRUSTED = "127.0.0.2"  # the control client; the load generator (127.0.0.1) is untrusted


def fs(name, rules):
    return (f"apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {{name: {name}}}\n"
            f"spec:\n  priorityLevelConfiguration: {{name: exempt}}\n  matchingPrecedence: 100\n  rules:\n"
            f"  - subjects: [{{kind: Group, group: {{name: system:unauthenticated}}}}, "
            f"{{kind: Group, group: {{name: system:authenticated}}}}]\n    {rules}\n---\n")


def rule(verbs="'*'", groups="'*'", resources="'*'", namespaces="'*'"):
    return (f"resourceRules: [{{verbs: [{verbs}], apiGroups: [{groups}], resources: [{resources}], "
            f"clusterScope: true, namespaces: [{namespaces}]}}]")


# attribute -> (the schema that routes the claim to exempt (the bootstrap
# probes for the path), the load generator's claim, the same claim as raw attributes)
CLAIMS = {
    "path": (None, "verb=get,path=/healthz", dict(verb=b"get", path=b"/healthz")),
    "verb": (fs("claim-verb", rule(verbs="deletecollection")),
             "verb=deletecollection,resource=pods,namespace=ns1", dict(verb=b"deletecollection", resource=b"pods", ns=b"ns1")),
    "api-group": (fs("claim-group", rule(groups="apps")),
                  "verb=get,api-group=apps,resource=deployments,namespace=ns1",
                  dict(verb=b"get", group=b"apps", resource=b"deployments", ns=b"ns1")),
    "resource": (fs("claim-resource", rule(resources="leases")),
                 "verb=get,resource=leases,namespace=ns1", dict(verb=b"get", resource=b"leases", ns=b"ns1")),
    "namespace": (fs("claim-namespace", rule(namespaces="kube-system")),
                  "verb=get,resource=pods,namespace=kube-system", dict(verb=b"get", resource=b"pods", ns=b"kube-system")),
}


def raw_attrs(user, groups, verb=b"get", group=None, resource=None, ns=None, path=None):
    a = t.attr(1, user) + b"".join(t.attr(2, g) for g in groups) + t.attr(4, verb)
    if ns:
        a += t.attr(3, ns)
    if group:
        a += t.attr(5, group)
    if resource:
        a += t.attr(6, resource)
    if path:
        a += t.attr(9, path)
    return a


def levels(d):
    return {lv["name"]: lv for lv in d.wait_idle()["priorityLevels"]}


b = f"127.0.0.1:{t.free_port()}"
t.backend(b, workers=64)
d = t.Daemon([b], ["--seat-limit", "40", "--trusted-source", f"{TRUSTED}/32"], config=None)
schemas = "".join(s for s, _, _ in CLAIMS.values() if s)
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", "-"], input=schemas, capture_output=True,
                   text=True, timeout=30)
t.check(p.returncode == 0, f"one exempt schema per claimable attribute applied ({p.stderr.strip()[-300:]})")

trusted = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
trusted.bind((TRUSTED, 0))
trusted.settimeout(5)
rid = 1
for attribute, (_, claim, raw) in CLAIMS.items():
    before = levels(d)
    # 20 closed-loop threads of 50 ms requests: on exempt they would all run
    # at once; the untrusted ones must be refused that.
    res = t.loadgen(d.addr, [f"name=c,user=admin,groups=system:masters+system:authenticated,{claim},"
                             f"threads=20,service=50ms,count=200"], duration="20s", timeout="5s")
    after = levels(d)
    got = {n: after[n]["received"] - before[n]["received"] for n in after}
    rejected = sum(res["c"]["rejected"].values())
    t.check(res["c"]["responses"] + rejected == 200 and got["exempt"] == 0 and got["global-default"] == 200,
            f"{attribute}: 200 untrusted requests claiming it land in global-default, none in exempt "
            f"({ {n: v for n, v in got.items() if v} }, answered {res['c']['responses']}+{rejected})")
    # The control: the same claim from a trusted source reaches exempt.
    rid += 1
    trusted.sendto(t.request(rid, attrs=raw_attrs(b"anyone", [b"system:authenticated"], **raw)), ("127.0.0.1", d.port))
    try:
        ans = t.decode_header(trusted.recvfrom(65536)[0])
    except socket.timeout:
        ans = None
    after2 = levels(d)
    t.check(ans and ans["type"] == t.RESPONSE and after2["exempt"]["received"] - after["exempt"]["received"] == 1,
            f"{attribute}: the same claim from a trusted source does reach exempt ({ans})")

# Hints: 10-seat LIST claims (work hint 1000 objects, seats 10) from the
# untrusted source take one seat each.
st_seen = []
lg = t.loadgen_start(d.addr, ["name=wide,user=x,verb=list,resource=pods,namespace=ns1,seats=10,threads=8,"
                              "service=300ms,count=40"], duration="20s", timeout="10s")
for _ in range(40):
    lv = t.level_of(d.status(), "global-default")
    if lv["executing"]:
        st_seen.append((lv["executing"], lv["seatsInUse"]))
    if lg.poll() is not None:
        break
    time.sleep(0.05)
res = t.loadgen_result(lg)
t.check(res["wide"]["responses"] == 40 and st_seen and all(e == s for e, s in st_seen) and max(e for e, _ in st_seen) > 1,
        f"hints: untrusted 10-seat claims run one seat each, several at once (executing, seats: {st_seen[:6]})")

# explain says what the rule did.
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "explain", "--user", "system:anonymous", "--group",
                    "system:unauthenticated", "--verb", "get", "--path", "/healthz", "--untrusted", "--why"],
                   capture_output=True, text=True, timeout=30)
t.check(p.returncode == 0 and '"global-default"' in p.stdout and "identity alone" in p.stdout,
        f"explain --untrusted --why: global-default, probes passed over by the trust rule ({p.stdout.strip()[-300:]})")
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "explain", "--user", "system:anonymous", "--group",
                    "system:unauthenticated", "--verb", "get", "--path", "/healthz"], capture_output=True, text=True,
                   timeout=30)
t.check(p.returncode == 0 and '"exempt"' in p.stdout, f"explain without --untrusted: exempt ({p.stdout.strip()[:120]})")
st = d.wait_idle()
t.check(t.invariant_holds(st), "every request accounted for")
rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
