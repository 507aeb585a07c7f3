#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import re
M = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
     "October", "November", "December"]
alt = "|".join(M)
iso = lambda y, m, d: f"{int(y):04d}-{int(m):02d}-{int(d):02d}"
s = open("journal.txt").read()
s = re.sub(r"(?<![\d/])(\d{1,2})/(\d{1,2})/(\d{4})(?![\d/])", lambda m: iso(m[3], m[1], m[2]), s)
s = re.sub(rf"\b(\d{{1,2}}) ({alt}) (\d{{4}})\b", lambda m: iso(m[3], M.index(m[2]) + 1, m[1]), s)
s = re.sub(rf"\b({alt}) (\d{{1,2}}), (\d{{4}})\b", lambda m: iso(m[3], M.index(m[1]) + 1, m[2]), s)
open("journal.txt", "w").write(s)
EOF
