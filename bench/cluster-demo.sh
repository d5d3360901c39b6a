#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Three fairgate instances sharing one backend pool's seats through etcd
# (docs/scale-out.md).  Starts an etcd on loopback (temporary data directory),
# one emulated backend, three instances in socket mode with the same
# configuration (one level, SEATS seats cluster-wide) and shifting loads:
# for the first half instance 1 is heavy and instance 3 light, for the second
# half the other way round; instance 2 stays medium.  Prints a line a second:
# per instance the requests/s it answered (from its status counters) and its
# seats (grant / local limit, cluster state), and the most requests the
# backend ever had in service.  Cleans everything up on exit.  Bounded:
# 2 x PHASE (default 15 s) plus start-up.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FAIRGATE_BUILD:-build}
PHASE=${PHASE:-15}
SEATS=${SEATS:-24}
if [ ! -x "$B/dataplane/fairgate" ]; then
  [ -f "$B/build.ninja" ] || meson setup "$B" >/dev/null
  ninja -C "$B" >/dev/null
fi
if ! command -v etcd >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends etcd-server >/dev/null
fi

WORK=$(mktemp -d /tmp/fairgate-cluster-demo.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
free_port() { # tcp|udp
  python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_STREAM if sys.argv[1]=="tcp" else socket.SOCK_DGRAM); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' "$1"
}

ETCD=http://127.0.0.1:$(free_port tcp)
PEER=http://127.0.0.1:$(free_port tcp)
etcd --name demo --data-dir "$WORK/etcd" --listen-client-urls "$ETCD" --advertise-client-urls "$ETCD" \
  --listen-peer-urls "$PEER" --initial-advertise-peer-urls "$PEER" --initial-cluster "demo=$PEER" \
  >"$WORK/etcd.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -fs "$ETCD/health" 2>/dev/null | grep -q '"true"' && break; sleep 0.1; done
curl -fs "$ETCD/health" | grep -q '"true"' || { echo "etcd did not start:"; tail -5 "$WORK/etcd.log"; exit 1; }

BACKEND=127.0.0.1:$(free_port udp)
$B/bench/fairgate-bench backend --listen "$BACKEND" --workers 128 --report "$WORK/backend.json" \
  --duration $((2 * PHASE + 20))s 2>/dev/null & pids+=($!)

# One level every request reaches; 1000 shares against catch-all's 5, so its
# cluster-wide limit is ceil(SEATS x 1000 / 1005) = SEATS for SEATS < 200.
cat >"$WORK/objects.yaml" <<'EOF'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: demo}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1000
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 50}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: everyone}
spec:
  priorityLevelConfiguration: {name: demo}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: "*"}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
EOF
ADDR=()
for i in 1 2 3; do
  ADDR[$i]=127.0.0.1:$(free_port udp)
  $B/dataplane/fairgate --listen "${ADDR[$i]}" --backend "$BACKEND" --seat-limit "$SEATS" --http off \
    --config "$WORK/objects.yaml" --control-socket "$WORK/m$i.sock" --queue-wait 4s \
    --cluster-etcd "$ETCD" --cluster-member "m$i" --cluster-period 200ms --cluster-lease-ttl 2s \
    >"$WORK/m$i.log" 2>&1 & pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 100); do [ -S "$WORK/m$i.sock" ] && break; sleep 0.1; done
done

load() { # instance threads
  $B/bench/fairgate-bench loadgen --target "${ADDR[$1]}" --duration "${PHASE}s" --timeout 8s \
    --flow "name=m$1,user=user-m$1,threads=$2,service=50ms" >/dev/null 2>&1 & pids+=($!)
}
echo "etcd $ETCD; backend $BACKEND; instances m1 ${ADDR[1]}, m2 ${ADDR[2]}, m3 ${ADDR[3]}; $SEATS seats cluster-wide"
echo "0-${PHASE}s: m1 64 clients, m2 16, m3 4; then m1 4, m2 16, m3 64 (50 ms requests, closed loop)"
load 1 64; load 2 16; load 3 4
# The second half's loads, from a subshell that takes them down if it is stopped early.
( trap 'kill $(jobs -p) 2>/dev/null' TERM; sleep "$PHASE" & wait $!; load 1 4; load 2 16; load 3 64; wait ) & pids+=($!)

python3 - "$WORK" "$B/control/fairgatectl" $((2 * PHASE)) "$SEATS" <<'EOF'
import json, subprocess, sys, time
work, ctl, seconds, seats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def status(i):
    r = subprocess.run([ctl, "--socket", f"{work}/m{i}.sock", "status", "-o", "json"],
                       capture_output=True, text=True, timeout=5)
    return json.loads(r.stdout) if r.returncode == 0 else None

last, start = {}, time.time()
for tick in range(1, seconds + 1):
    time.sleep(max(0.0, start + tick - time.time()))
    cells = []
    for i in (1, 2, 3):
        st = status(i)
        if st is None:
            cells.append(f"m{i} (no status)")
            continue
        done = st["counters"]["responded"]
        rate, last[i] = done - last.get(i, 0), done
        c = st.get("cluster", {})
        lv = next((l for l in c.get("levels", []) if l["name"] == "demo"), {})
        cells.append(f"m{i} {rate:5d} req/s seats {lv.get('grant', '?'):>2}/{lv.get('local_limit', '?'):<2} "
                     f"{c.get('state', 'off'):8}")
    try:
        with open(f"{work}/backend.json") as f:
            most = json.load(f)["max_in_service"]
    except (OSError, ValueError):
        most = "?"
    print(f"t={tick:3d}s  " + " | ".join(cells) + f" | backend max {most}/{seats}", flush=True)
EOF
