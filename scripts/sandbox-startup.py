#!/usr/bin/env python3
"""How much a sandbox adds to a server's start: runs /bin/true directly, under
`switchboard sandbox-exec` with no flags, with every limit and Landlock paths, and with
--network none too (as root a network namespace of its own), N times each, interleaved, and
prints the median and p90 in ms.

Usage: scripts/sandbox-startup.py [SWITCHBOARD] [N]   (default target/release/switchboard, 200)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

switchboard = sys.argv[1] if len(sys.argv) > 1 else "target/release/switchboard"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
targets = {
    "direct": ["/bin/true"],
    "launcher, no flags": [switchboard, "sandbox-exec", "--", "/bin/true"],
    "launcher, limits + fs": [
        switchboard, "sandbox-exec", "--memory", "1073741824", "--cpu", "600", "--files", "256",
        "--processes", "64", "--read", "/srv", "--write", "/tmp", "--", "/bin/true",
    ],
    "launcher, full sandbox": [
        switchboard, "sandbox-exec", "--memory", "1073741824", "--cpu", "600", "--files", "256",
        "--processes", "64", "--read", "/srv", "--write", "/tmp", "--network", "none",
        "--", "/bin/true",
    ],
}
times: dict[str, list[float]] = {name: [] for name in targets}
for _ in range(runs):
    for name, command in targets.items():
        began = time.perf_counter()
        subprocess.run(command, check=True)
        times[name].append((time.perf_counter() - began) * 1000)
for name, samples in times.items():
    samples.sort()
    print(f"{name:24} median {statistics.median(samples):6.2f} ms   p90 {samples[int(len(samples) * 0.9)]:6.2f} ms")
