#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
from datetime import datetime
opened, per = {}, {}
for line in open("auth_events.log"):
    f = line.split()
    if len(f) != 5:
        continue
    ts = datetime.strptime(f[0] + " " + f[1], "%Y-%m-%d %H:%M:%S")
    kv = dict(x.split("=", 1) for x in f[2:])
    if kv["action"] == "login":
        opened[kv["session"]] = (kv["user"], ts)
    elif kv["session"] in opened:
        u, st = opened.pop(kv["session"])
        per.setdefault(u, []).append(int((ts - st).total_seconds()))
with open("sessions.csv", "w") as out:
    out.write("user,sessions,total_seconds,longest_seconds\n")
    for u, v in sorted(per.items(), key=lambda kv: (-sum(kv[1]), kv[0])):
        out.write(f"{u},{len(v)},{sum(v)},{max(v)}\n")
EOF
