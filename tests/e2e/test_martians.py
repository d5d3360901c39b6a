# SPDX-License-Identifier: Apache-2.0
"""Socket mode, a host that routes loopback sources from the wire
(route_localnet=1, as kube-proxy sets it): a datagram arriving on a network
interface with a 127.0.0.x source would pass for a trusted local process
(loopback is a trusted source by default). fairgate drops it (IP_PKTINFO: a
loopback source must arrive on lo), while the same request from a real
local process is served. Runs inside a network namespace with a veth pair
that the test creates and removes; nothing leaves it."""
import os
import socket
import struct
import subprocess
import sys
import time

import fgtest as t

NS = f"fgmart-{os.getpid()}"
FG_IP, PEER_IP = "198.51.100.1", "198.51.100.2"  # TEST-NET-2, only inside our namespace


def sh(*args):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=30)


def ns(*args):
    return sh("ip", "netns", "exec", NS, *args)


if sh("ip", "netns", "add", NS).returncode != 0:
    print("SKIP: cannot create a network namespace")
    sys.exit(77)
try:
    for cmd in (["ip", "link", "set", "lo", "up"],
                ["ip", "link", "add", "fgm0", "type", "veth", "peer", "name", "fgm1"],
                ["ip", "addr", "add", f"{FG_IP}/24", "dev", "fgm0"], ["ip", "addr", "add", f"{PEER_IP}/24", "dev", "fgm1"],
                ["ip", "link", "set", "fgm0", "up"], ["ip", "link", "set", "fgm1", "up"],
                ["sysctl", "-qw", "net.ipv4.conf.fgm0.route_localnet=1"],
                ["sysctl", "-qw", "net.ipv4.conf.all.rp_filter=0"], ["sysctl", "-qw", "net.ipv4.conf.fgm0.rp_filter=0"]):
        r = ns(*cmd)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stderr}")
    port = t.free_port()
    b = f"127.0.0.1:{t.free_port()}"
    t.backend(b, netns=NS)
    d = t.Daemon([b], ["--listen", f"0.0.0.0:{port}"], netns=NS, config=None)
    mac = ns("cat", "/sys/class/net/fgm0/address").stdout.strip()
    forge = f"""
import socket, struct, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import fgtest
payload = fgtest.request(7, attrs=fgtest.attr(1, b"admin") + fgtest.attr(2, b"system:masters") +
                         fgtest.attr(4, b"get") + fgtest.attr(6, b"pods"))
udp = struct.pack("!HHHH", 40000, {port}, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, socket.inet_aton("127.0.0.5"),
                 socket.inet_aton("{FG_IP}"))
c = sum(struct.unpack("!10H", ip)); c = (c & 0xffff) + (c >> 16); c = ~((c & 0xffff) + (c >> 16)) & 0xffff
ip = ip[:10] + struct.pack("!H", c) + ip[12:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("fgm1", 0))
src_mac = bytes.fromhex(open("/sys/class/net/fgm1/address").read().strip().replace(":", ""))
for _ in range(20):
    s.send(bytes.fromhex("{mac}".replace(":", "")) + src_mac + b"\\x08\\x00" + ip + udp)
"""
    before = d.status()["counters"]
    r = ns("python3", "-c", forge)
    t.check(r.returncode == 0, f"forged loopback-source frames sent on the veth ({r.stderr.strip()[-300:]})")
    time.sleep(0.5)
    after = d.status()["counters"]
    t.check(after["requestsReceived"] == before["requestsReceived"] and
            after["cookieChallenges"] == before["cookieChallenges"],
            f"a 127.0.0.5 source arriving on a network interface is dropped "
            f"({after['requestsReceived'] - before['requestsReceived']} received)")
    # The same claim from a local process is believed: it lands in exempt.
    probe = f"""
import socket, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import fgtest
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.5", 0)); s.settimeout(5)
s.sendto(fgtest.request(8, attrs=fgtest.attr(1, b"admin") + fgtest.attr(2, b"system:masters") +
         fgtest.attr(4, b"get") + fgtest.attr(6, b"pods")), ("127.0.0.1", {port}))
print(fgtest.decode_header(s.recv(9000))["type"])
"""
    r = ns("python3", "-c", probe)
    exempt = [lv for lv in d.status()["priorityLevels"] if lv["name"] == "exempt"]
    t.check(r.stdout.strip() == "2" and exempt and exempt[0]["received"] >= 1,
            f"the same request from a local process is served, in exempt ({r.stdout.strip()} {r.stderr[-200:]})")
    _, err = d.stop()
    drops = [ln for ln in (err or "").splitlines() if 'msg="datagrams dropped" reason="martian source' in ln]
    t.check(len(drops) == 1 and " count=20 " in drops[0], f"the 20 drops are one log line ({drops})")
finally:
    t.cleanup()
    sh("ip", "netns", "del", NS)
t.finish()
