# SPDX-License-Identifier: Apache-2.0
"""Cluster mode against an etcd that requires TLS with client certificates
and authentication (issue 26; docs/scale-out.md "TLS and authentication"):
a CA, etcd's server certificate (etcd.test and 127.0.0.1) and a client
certificate (no CN: etcd's gateway refuses one with a CN once auth is on)
made here with openssl; etcd started with --client-cert-auth and `auth
enable`, a user `fairgate` whose role may read and write /fairgate/ only.
Checked:

- two members with CA, certificate, key, user and password file join, share
  L = 12 under load, and the backend never has more than 12 in service;
- their records are in etcd, under their leases;
- etcd restarted, and a user added (JWT tokens then carry an old auth
  revision, etcd's code 3): the members authenticate again and stay joined;
- a member with --cluster-etcd-server-name etcd.test joins; one with a name
  the certificate lacks, one with a wrong password, one trusting another
  CA, one without a client certificate: none joins, each status says why;
- http:// with a user is refused at start (the password would cross the
  network in clear).
Bounded: about 40 s."""
import os
import subprocess
import tempfile
import time

import etcdtest
import fgtest as t

LIMIT = 12
tmp = tempfile.mkdtemp(prefix="fg-tls-")


def openssl(*args):
    p = subprocess.run(["openssl"] + list(args), capture_output=True, text=True, timeout=60)
    if p.returncode:
        raise RuntimeError("openssl " + " ".join(args) + ": " + p.stderr)


def path(name):
    return os.path.join(tmp, name)


def make_ca(name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
            "-subj", f"/CN={name}", "-keyout", path(name + ".key"), "-out", path(name + ".pem"))


def make_cert(name, ca, ext, subject=None):
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subject or f"/CN={name}",
            "-keyout", path(name + ".key"), "-out", path(name + ".csr"))
    with open(path(name + ".ext"), "w") as f:
        f.write(ext)
    openssl("x509", "-req", "-in", path(name + ".csr"), "-CA", path(ca + ".pem"), "-CAkey", path(ca + ".key"),
            "-CAcreateserial", "-days", "2", "-extfile", path(name + ".ext"), "-out", path(name + ".pem"))


make_ca("ca")
make_ca("rogue-ca")
make_cert("server", "ca", "subjectAltName=DNS:etcd.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n")
# No CN: with auth enabled, etcd's JSON gateway refuses a client certificate
# that has one ("CommonName ... will be ignored"); the password lets members in.
make_cert("member", "ca", "extendedKeyUsage=clientAuth\n", subject="/O=fairgate-members")
with open(path("password"), "w") as f:
    f.write("s3cret-pw\n")
os.chmod(path("password"), 0o600)
with open(path("wrong-password"), "w") as f:
    f.write("not-it\n")
os.chmod(path("wrong-password"), 0o600)

# JWT tokens: each carries the auth store's revision, so a user added later
# makes them "old" (etcd's code 3) — the case a member must re-authenticate on.
openssl("genrsa", "-out", path("jwt.key"), "2048")
openssl("rsa", "-in", path("jwt.key"), "-pubout", "-out", path("jwt.pub"))
etcd = etcdtest.Etcd(tls=dict(ca=path("ca.pem"), cert=path("server.pem"), key=path("server.key"),
                              client_cert=path("member.pem"), client_key=path("member.key")),
                     extra=["--auth-token", f"jwt,pub-key={path('jwt.pub')},priv-key={path('jwt.key')},"
                            "sign-method=RS256,ttl=10m"])
etcd.enable_auth({"fairgate": "s3cret-pw"})
report = path("backend.json")
backend_addr = f"127.0.0.1:{t.free_port()}"
t.backend(backend_addr, workers=64, extra=["--report", report, "--service-time", "100ms"], duration="90s")


def member(name, url=None, **over):
    opts = {"--cluster-etcd-ca": path("ca.pem"), "--cluster-etcd-cert": path("member.pem"),
            "--cluster-etcd-key": path("member.key"), "--cluster-etcd-user": "fairgate",
            "--cluster-etcd-password-file": path("password")}
    opts.update(over)
    args = ["--seat-limit", str(LIMIT), "--backend-timeout", "1s", "--cluster-etcd", url or etcd.url,
            "--cluster-member", name, "--cluster-period", "200ms", "--cluster-lease-ttl", "2s"]
    for k, v in opts.items():
        if v is not None:
            args += [k, v]
    return t.Daemon([backend_addr], args, log=path(name + ".log"))


def cluster(d):
    return d.status()["cluster"]


def wait_state(d, want, timeout=6):
    deadline = time.time() + timeout
    c = cluster(d)
    while c["state"] != want and time.time() < deadline:
        time.sleep(0.1)
        c = cluster(d)
    return c


def backend_max():
    import json
    with open(report) as f:
        return json.load(f)["max_in_service"]


try:
    m1, m2 = member("m1"), member("m2")
    for n, d in (("m1", m1), ("m2", m2)):
        c = wait_state(d, "joined")
        t.check(c["state"] == "joined", f"{n} joins over TLS with a client certificate and a password "
                                        f"({c['state']}: {c['last_error']})")
    l1 = t.loadgen_start(m1.addr, ["name=a,user=a,threads=16,service=100ms"], duration="12s", timeout="5s")
    l2 = t.loadgen_start(m2.addr, ["name=b,user=b,threads=16,service=100ms"], duration="12s", timeout="5s")
    time.sleep(3)
    keys = etcd.keys("/fairgate/")
    t.check({"/fairgate/fairgate/grant/m1", "/fairgate/fairgate/grant/m2"} <= set(keys),
            f"the members' records are in etcd ({sorted(keys)})")
    grants = [next(lv["grant"] for lv in cluster(d)["levels"] if lv["name"] == t.TEST_LEVEL) for d in (m1, m2)]
    t.check(sum(grants) <= LIMIT and min(grants) > 0, f"they share L = {LIMIT}: grants {grants}")

    # etcd restarted: the members carry on (a JWT outlives a restart).
    etcd.stop()
    etcd.start()
    etcd.login("root", "root-pw")
    time.sleep(3)
    for n, d in (("m1", m1), ("m2", m2)):
        c = wait_state(d, "joined")
        t.check(c["state"] == "joined", f"{n} is joined after etcd restarted ({c['state']}: {c['last_error']})")

    # The auth store changes (a user added): tokens issued before carry an
    # old revision ("revision of auth store is old"); the members take a new
    # one within the same exchange, no exchange fails.
    before = {n: cluster(d)["failures"] for n, d in (("m1", m1), ("m2", m2))}
    etcd.call("/v3/auth/user/add", {"name": "someone-else", "password": "x"})
    time.sleep(2)
    for n, d in (("m1", m1), ("m2", m2)):
        c = cluster(d)
        t.check(c["state"] == "joined" and c["failures"] == before[n],
                f"{n} authenticates again when the auth store changed, no exchange failed "
                f"({c['state']}, failures {before[n]} -> {c['failures']}: {c['last_error']})")

    # A server name for endpoints that are addresses.
    m3 = member("m3", **{"--cluster-etcd-server-name": "etcd.test"})
    c = wait_state(m3, "joined")
    t.check(c["state"] == "joined", f"m3 with --cluster-etcd-server-name etcd.test joins ({c['last_error']})")
    m3.stop()

    # What must not get in, and says why.
    bad = [("wrong-name", {"--cluster-etcd-server-name": "other.test"}, ("certificate", "SSL", "subject")),
           ("wrong-password", {"--cluster-etcd-password-file": path("wrong-password")}, ("refused user fairgate",)),
           ("wrong-ca", {"--cluster-etcd-ca": path("rogue-ca.pem")}, ("certificate", "SSL")),
           ("no-client-cert", {"--cluster-etcd-cert": None, "--cluster-etcd-key": None}, ("clusterEtcdCert",))]
    for name, over, words in bad:
        d = member(name, **over)
        time.sleep(2.5)
        c = cluster(d)
        t.check(c["state"] != "joined" and any(w in c["last_error"] for w in words),
                f"{name}: not joined, and status says why ({c['state']}: {c['last_error']!r})")
        d.stop()

    t.loadgen_result(l1)
    t.loadgen_result(l2)
    t.check(backend_max() <= LIMIT, f"backend max {backend_max()} <= {LIMIT}")

    # A user over http:// is refused before anything is sent.
    p = subprocess.run([t.FAIRGATE, "--listen", f"127.0.0.1:{t.free_port()}", "--control-socket", path("x.sock"),
                        "--http", "off", "--backend", backend_addr, "--cluster-etcd", "http://127.0.0.1:2379",
                        "--cluster-etcd-user", "fairgate", "--cluster-etcd-password-file", path("password")],
                       capture_output=True, text=True, timeout=30)
    t.check(p.returncode != 0 and "clusterEtcdUser" in p.stderr and "https" in p.stderr,
            f"a user over http:// is refused at start ({p.returncode}: {p.stderr.strip()[-200:]})")
    for d in (m1, m2):
        rc, _ = d.stop()
        t.check(rc == 0, "clean exit")
finally:
    etcd.remove()
t.finish()
