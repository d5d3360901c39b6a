#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Single-worker end-to-end throughput on this machine, as ratios against a
# baseline measured in the same command: the load generator straight to the
# emulated backend (no fairgate), then through fairgate in socket mode, then
# through fairgate in DPDK mode (net_tap inside a network namespace this
# script creates and removes).  Zero service time, so the numbers are the
# cost of the request path.  The clients are authenticated users
# (system:authenticated), so their requests land in global-default, a
# queuing level, not in catch-all's Reject.  Bounded: each phase runs
# DURATION (default 5s).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${FAIRGATE_BUILD:-build}
DURATION=${DURATION:-5s}
THREADS=${THREADS:-64}
WORK=$(mktemp -d /tmp/fairgate-tput.XXXXXX)
NS=fgtput-$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$NS" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

rate() { # target [netns]
  local pre=()
  [ -n "${2:-}" ] && pre=(ip netns exec "$2")
  "${pre[@]}" $B/bench/fairgate-bench loadgen --target "$1" --duration "$DURATION" --timeout 2s --json \
    --flow name=load,user=bench,groups=system:authenticated,threads=$THREADS,service=0s |
    python3 -c 'import json,sys; f=json.load(sys.stdin)["flows"][0]; print("%.0f %d %d" % (f["responsesPerSec"], f["lost"], f["rejectedTotal"]))'
}

$B/bench/fairgate-bench backend --listen 127.0.0.1:7611 --workers 4 --service-time 0s 2>/dev/null & pids+=($!)
sleep 0.3
read -r direct lost_d _ < <(rate 127.0.0.1:7611)

$B/dataplane/fairgate --listen 127.0.0.1:7610 --backend 127.0.0.1:7611 --control-socket $WORK/s.sock 2>/dev/null & pids+=($!)
sleep 0.5
read -r sock lost_s rej_s < <(rate 127.0.0.1:7610)

dpdk=skipped
if [ -e /dev/net/tun ] && ip netns add "$NS" 2>/dev/null; then
  ip netns exec "$NS" ip link set lo up
  ip netns exec "$NS" $B/dataplane/fairgate --io dpdk --listen 192.0.2.2:7400 --backend 192.0.2.1:7501 \
    --control-socket $WORK/d.sock -- --no-huge -m 512 --no-pci --no-shconf --file-prefix=$NS -l 0 \
    --vdev=net_tap0,iface=fgtap0 >/dev/null 2>&1 & pids+=($!)
  for _ in $(seq 100); do ip netns exec "$NS" ip link show fgtap0 >/dev/null 2>&1 && break; sleep 0.1; done
  ip netns exec "$NS" ip addr add 192.0.2.1/24 dev fgtap0
  ip netns exec "$NS" $B/bench/fairgate-bench backend --listen 192.0.2.1:7501 --workers 4 --service-time 0s 2>/dev/null & pids+=($!)
  sleep 0.5
  read -r dpdk lost_k rej_k < <(rate 192.0.2.2:7400 "$NS")
fi

echo "loadgen -> backend directly        : $direct req/s (lost $lost_d)"
echo "loadgen -> fairgate socket -> backend: $sock req/s (lost $lost_s, rejected $rej_s), ratio $(python3 -c "print(f'{$sock/$direct:.2f}')")"
if [ "$dpdk" != skipped ]; then
  echo "loadgen -> fairgate DPDK tap -> backend: $dpdk req/s (lost $lost_k, rejected $rej_k), ratio $(python3 -c "print(f'{$dpdk/$direct:.2f}')")"
else
  echo "DPDK phase skipped (no /dev/net/tun or no network namespaces)"
fi
