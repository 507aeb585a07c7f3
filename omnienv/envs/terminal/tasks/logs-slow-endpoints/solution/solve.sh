#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import json, math, re
recs = []
for line in open("requests.log"):
    f = line.split()
    if len(f) < 5:
        continue
    recs.append((f[1], f[2].split("?")[0], int(f[3].split("=")[1]), int(re.match(r"rt=(\d+)ms", f[4]).group(1))))
n = len(recs)
by = {}
for m, p, s, ms in recs:
    by.setdefault(p, []).append(ms)
means = {p: sum(v) / len(v) for p, v in by.items() if len(v) >= 5}
rts = sorted(r[3] for r in recs)
methods = {}
for r in recs:
    methods[r[0]] = methods.get(r[0], 0) + 1
five = sum(1 for r in recs if r[2] >= 500)
json.dump({"total_requests": n, "server_errors": five, "error_rate": round(five / n, 4),
           "slowest_endpoint": max(means, key=means.get), "p95_ms": rts[math.ceil(0.95 * n) - 1],
           "requests_per_method": methods}, open("report.json", "w"), indent=2)
EOF
