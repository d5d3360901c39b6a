#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Requests of different widths over several workers, many shapes at once
(docs/fair-queuing.md, section 8): runs `fairgate-bench sim` on variants of
tests/scenarios/workers4_k8s_different_widths.json and prints each flow's
error against its max-min ideal over the whole run (0-140 s), the seats the
shape left idle, and a summary over the multi-worker shapes (sum of the
absolute errors, how many flows are more than 5% off, the worst, the idle
seats in all).  The simulator is deterministic: the same code gives the same
figures on any machine.

  python3 bench/widths_sweep.py k8s      # Kubernetes' shape (6 seats, 1- and 2-seat flows):
                                         # 1-5 workers x 9 flow-hash pairs, open loop 2-4 workers x 5
  python3 bench/widths_sweep.py mixed    # 2, 4, 8 workers x 6/12/20 seats x widths (1,3), (1,2),
                                         # (1,2,4), (1,1,2,3) x 3 seeds of random flow hashes
  python3 bench/widths_sweep.py k8s --bench build/bench/fairgate-bench --quiet

The k8s shape's hash pairs were picked so that the two flows' hands of 7 of
the 64 queues do not overlap (the per-flow ideal assumes separate queues);
the mixed shapes' hashes are random (seed 11) and may share a queue, which
the per-flow ideal does not allow for: read those as a comparison between
two versions of the code, not as absolute errors."""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
BASE = os.path.join(ROOT, "tests", "scenarios", "workers4_k8s_different_widths.json")
OPEN_LOOP = os.path.join(ROOT, "tests", "scenarios", "workers2_open_loop_different_widths.json")
# (1-seat flow, 2-seat flow): the scenario's own pair first, then eight with disjoint hands
PAIRS = [(4545245708110107337, 2857203775587457004),
         (868196408185819179, 5375270654777870840), (792723338049442008, 3856957380441106266),
         (545198181100374566, 5215389816265151663), (5377197318101497525, 570576685538020777),
         (5400666402170143951, 457380681191578132), (4986947095633979044, 5265749391392088512),
         (5167461299025127992, 6290364617955584047), (950521141494289803, 5268430586848198545)]


def errors(bench, path):
    """Per flow (name order): (avgSeats - ideal) / ideal in %, and the seats used in all."""
    out = subprocess.run([bench, "sim", "--table", path], capture_output=True, text=True, check=True).stdout
    errs, used, window = [], 0.0, None
    for line in out.splitlines():
        m = re.match(r"window (\d+)", line)
        if m:
            window = int(m.group(1))
            continue
        f = line.split()
        if window == 0 and len(f) >= 7 and f[-1].endswith("%") and f[0] != "FLOW":
            avg, ideal = float(f[-3]), float(f[-2])
            errs.append(100.0 * (avg - ideal) / ideal)
            used += avg
    return errs, used


def k8s_shapes(tmp):
    base = json.load(open(BASE))
    shapes = []
    for workers in (1, 2, 3, 4, 5):
        for i, (a, b) in enumerate(PAIRS):
            sc = dict(base, workers=workers)
            sc["clients"] = [dict(base["clients"][0], flowHash=a), dict(base["clients"][1], flowHash=b)]
            shapes.append((f"closed w{workers} pair{i}", workers, 6, sc))
    ol = json.load(open(OPEN_LOOP))
    for workers in (2, 3, 4):
        for i, (a, b) in enumerate(PAIRS[:5]):
            sc = dict(ol, workers=workers)
            sc["clients"] = [dict(ol["clients"][0], flowHash=a), dict(ol["clients"][1], flowHash=b)]
            shapes.append((f"open   w{workers} pair{i}", workers, 6, sc))
    return shapes


def mixed_shapes(tmp):
    base = json.load(open(BASE))
    rng = random.Random(11)
    shapes = []
    for workers in (2, 4, 8):
        for seats, widths in ((12, (1, 2)), (6, (1, 3)), (12, (1, 2, 4)), (20, (1, 1, 2, 3))):
            for seed in range(3):
                sc = json.loads(json.dumps(base))
                sc.update(workers=workers, levelConcurrency={"pl": seats}, expect=[{"window": 0, "margin": 1}])
                sc["clients"] = [dict(base["clients"][0], name=f"c{k}", flowHash=rng.getrandbits(63),
                                      initialSeats=w, threads=2 * seats // w + 1) for k, w in enumerate(widths)]
                label = ",".join(map(str, widths))
                shapes.append((f"w{workers} {seats:2d} seats widths {label:7s} seed{seed}", workers, seats, sc))
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set", choices=("k8s", "mixed"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "fairgate-bench"))
    ap.add_argument("--quiet", action="store_true", help="the summary only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fg-widths-") as tmp:
        shapes = (k8s_shapes if args.set == "k8s" else mixed_shapes)(tmp)
        paths = []
        for n, (_, _, _, sc) in enumerate(shapes):
            p = os.path.join(tmp, f"{n}.json")
            json.dump(sc, open(p, "w"))
            paths.append(p)
        results = list(ThreadPoolExecutor(2).map(lambda p: errors(args.bench, p), paths))
    total = worst = idle = 0.0
    over = count = 0
    for (name, workers, seats, _), (errs, used) in zip(shapes, results):
        if not args.quiet:
            print(f"{name:40s} " + " ".join(f"{e:+6.1f}%" for e in errs) + f"   idle {seats - used:.2f} seats")
        if workers > 1:
            total += sum(abs(e) for e in errs)
            over += sum(abs(e) > 5 for e in errs)
            count += len(errs)
            worst = max([worst] + [abs(e) for e in errs])
            idle += seats - used
    print(f"multi-worker shapes: {count} flows, sum of |error| {total:.1f} points, {over} more than 5% off, "
          f"worst {worst:.1f}%, idle {idle:.2f} seats in all")


if __name__ == "__main__":
    sys.exit(main())
