#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import json, re
fails, users, after = {}, {}, {}
for line in open("auth.log"):
    m = re.search(r"Failed password for (?:invalid user )?(\S+) from (\S+) port", line)
    if m:
        user, ip = m.groups()
        fails[ip] = fails.get(ip, 0) + 1
        users.setdefault(ip, set()).add(user)
        continue
    m = re.search(r"Accepted password for \S+ from (\S+) port", line)
    if m and fails.get(m.group(1), 0) >= 5:
        after[m.group(1)] = True
ips = sorted((ip for ip, n in fails.items() if n >= 5), key=lambda ip: (-fails[ip], ip))
json.dump([{"ip": ip, "failures": fails[ip], "users": sorted(users[ip]), "accepted_after": after.get(ip, False)}
           for ip in ips], open("suspects.json", "w"), indent=2)
EOF
