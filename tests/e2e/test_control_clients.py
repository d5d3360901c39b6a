# SPDX-License-Identifier: Apache-2.0
"""Control connections under abuse (issue 17): connections from a non-admin
cannot lock an admin out, idle ones are closed, and fairgatectl turned away
says why instead of dying of SIGPIPE; a huge answer read slowly arrives whole
without holding up other clients, and the next answer is intact; rights are
checked per command against the controlAdmins in force, supplementary
groups included."""
import json
import os
import subprocess
import tempfile
import time

import ctltest as c
import fgtest as t

c.need_root()
b = f"127.0.0.1:{t.free_port()}"
t.backend(b)
d = t.Daemon([b])
os.chmod(d.sock, 0o666)  # let the peers under other uids connect
nobody_ctl = t.executable_for_other_uid(t.FAIRGATECTL)  # a clone under /root is closed to uid 65534


def drop_to_nobody():
    os.setgroups([])
    os.setgid(c.NOBODY)
    os.setuid(c.NOBODY)


def flowschema(name, precedence=1000):
    return (f"apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {{name: {name}}}\n"
            f"spec: {{priorityLevelConfiguration: {{name: {t.TEST_LEVEL}}}, matchingPrecedence: {precedence}, "
            f"rules: [{{subjects: [{{kind: User, user: {{name: {name}}}}}], "
            f"nonResourceRules: [{{verbs: [get], nonResourceURLs: [/{name}]}}]}}]}}\n")


# --- 17 idle connections from uid 65534; an admin still gets in -------------
nobody = c.Peer(d.sock)
opened = time.time()
refused = 0
for i in range(17):
    # An accepted connection stays silent (the short wait runs out); a
    # refused one is told why and closed.
    r = nobody.do(conn=i, wait=0.3)
    refused += bool(r.get("answer") and "too many control clients" in r["answer"]["error"])
t.check(refused == 5, f"uid 65534 holds 12 connections, the next 5 are refused ({refused} refused)")
t0 = time.time()
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "status", "-o", "json"], capture_output=True, text=True,
                   timeout=10)
t.check(p.returncode == 0 and "counters" in p.stdout and time.time() - t0 < 3,
        f"root still gets in and is answered while a non-admin holds every other slot ({p.stderr.strip()})")
# fairgatectl turned away while it writes a large request: the refusal, exit 1, no SIGPIPE death.
with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
    f.write("".join("---\n" + flowschema(f"big-{i}") for i in range(3000)))
big_file = f.name
os.chmod(big_file, 0o644)  # fairgatectl reads it as uid 65534
p = subprocess.run([nobody_ctl, "--socket", d.sock, "apply", "-f", big_file], capture_output=True, text=True,
                   timeout=20, preexec_fn=drop_to_nobody)
t.check(p.returncode == 1 and "too many control clients" in p.stderr,
        f"fairgatectl refused mid-request: exit 1 with the daemon's reason (rc={p.returncode}, {p.stderr.strip()[:200]})")
# The idle timeout frees the slots.
r = nobody.do(conn=0, wait=20)
idle_for = time.time() - opened
t.check(r.get("answer") is not None and "idle timeout" in r["answer"]["error"] and 9 <= idle_for <= 16,
        f"an idle connection is told and closed after the idle timeout ({idle_for:.1f}s, {r})")
time.sleep(0.5)
p = subprocess.run([nobody_ctl, "--socket", d.sock, "version"], capture_output=True, text=True, timeout=10,
                   preexec_fn=drop_to_nobody)
t.check(p.returncode == 0, f"after the idle timeout uid 65534 gets in again ({p.stderr.strip()})")
nobody.close()

# --- a huge answer, read slowly ------------------------------------------------
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "apply", "-f", big_file], capture_output=True, text=True,
                   timeout=60)
os.unlink(big_file)
t.check(p.returncode == 0, f"3000 FlowSchemas applied ({p.stderr.strip()[:200]})")
s = c.connect(d.sock, timeout=30)
s.sendall(b'{"command":"get","kind":"fs"}\n')
data = s.recv(65536)
t0 = time.time()
st = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "status", "-o", "json"], capture_output=True, text=True,
                    timeout=10)
t.check(st.returncode == 0 and time.time() - t0 < 2, "another client is answered while a slow reader holds a huge answer")
reads = 0
while not data.endswith(b"\n") and reads < 2000:  # bounded: 2000 x 16 KiB is far beyond the answer
    time.sleep(0.002)
    chunk = s.recv(16384)
    if not chunk:
        break
    data += chunk
    reads += 1
ans = json.loads(data) if data.endswith(b"\n") else None
names = {o["metadata"]["name"] for o in ans["result"]["items"]} if ans else set()
t.check(len(data) > 1 << 20 and ans is not None and ans["ok"] and all(f"big-{i}" in names for i in range(3000)),
        f"a {len(data)}-byte answer read slowly arrives whole, newline-terminated")
nxt = c.ask(s, {"command": "version"})
t.check(nxt is not None and nxt["result"]["version"] == "0.1.0", "the next answer on that connection is intact")
s.close()

# --- a revoked admin: rights are checked per command ----------------------------
ok, err = c.apply_admins(d, uids=[c.NOBODY])
t.check(ok, f"controlAdmins.uids [65534] applied ({err.strip()})")
peer = c.Peer(d.sock)
r = peer.do(conn=0, req={"command": "apply", "data": flowschema("granted")})
t.check((r.get("answer") or {}).get("ok") is True, f"uid 65534, listed, may apply ({r})")
ok, err = c.apply_admins(d, uids=[])
r = peer.do(conn=0, req={"command": "apply", "data": flowschema("revoked")})
t.check(ok and (r.get("answer") or {}).get("ok") is False and "permission denied" in r["answer"]["error"],
        f"after controlAdmins drops uid 65534, its open connection may no longer apply ({r})")
r = peer.do(conn=0, req={"command": "delete", "kind": "fs", "name": "granted"})
t.check((r.get("answer") or {}).get("ok") is False, "nor delete")
r = peer.do(conn=0, req={"command": "status"})
t.check((r.get("answer") or {}).get("ok") is True, "it may still read")
peer.close()
names = json.loads(subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "get", "fs", "-o", "json"],
                                  capture_output=True, text=True, timeout=10).stdout)
names = {o["metadata"]["name"] for o in names["items"]}
t.check("granted" in names and "revoked" not in names, "only the admitted apply took effect")

# --- a revoked admin's connections count as a reader's at once ---------------------
root = c.Peer(d.sock, uid=0, gid=0)
r = root.do(conn=0, req={"command": "version"})  # root holds one slot
ok, err = c.apply_admins(d, uids=[c.NOBODY])
hog = c.Peer(d.sock)
held = sum(bool((hog.do(conn=i, req={"command": "version"}).get("answer") or {}).get("ok")) for i in range(15))
t.check(ok and held == 15, f"uid 65534, an admin, holds every other slot ({held}/15)")
revoke = ("apiVersion: fairgate.dev/v1alpha1\nkind: FairgateSettings\n"
          "spec: {controlAdmins: {uids: [], gids: []}}\n")
r = root.do(conn=0, req={"command": "apply", "data": revoke})
t.check((r.get("answer") or {}).get("ok") is True, f"root revokes uid 65534 over its open connection ({r})")
t0 = time.time()
p = subprocess.run([t.FAIRGATECTL, "--socket", d.sock, "status", "-o", "json"], capture_output=True, text=True,
                   timeout=10)
t.check(p.returncode == 0 and time.time() - t0 < 3,
        f"an admin still gets in: it takes the slot of a revoked admin's idle connection ({p.stderr.strip()})")
late = c.Peer(d.sock)
r = late.do(conn=0, wait=1)
t.check("too many control clients" in ((r.get("answer") or {}).get("error") or ""),
        f"a reader finds no slot while the revoked admin's connections count as readers' ({r})")
for peer_proc in (late, hog, root):
    peer_proc.close()

# --- supplementary groups -------------------------------------------------------------
ok, err = c.apply_admins(d, gids=[4242])
member = c.Peer(d.sock, groups=[4242])
r = member.do(conn=0, req={"command": "apply", "data": flowschema("by-group")})
t.check(ok and (r.get("answer") or {}).get("ok") is True,
        f"uid 65534 with supplementary group 4242 (listed in controlAdmins.gids) may apply ({r})")
member.close()
outsider = c.Peer(d.sock, groups=[4243])
r = outsider.do(conn=0, req={"command": "apply", "data": flowschema("by-other-group")})
t.check((r.get("answer") or {}).get("ok") is False and "permission denied" in r["answer"]["error"],
        "with only an unlisted supplementary group it may not")
outsider.close()

rc, _ = d.stop()
t.check(rc == 0, "clean exit")
t.finish()
