#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import csv, os, re
tpl = open("template.txt").read()
os.makedirs("letters", exist_ok=True)
with open("customers.csv", newline="") as f:
    for row in csv.DictReader(f):
        out = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: row[m.group(1)], tpl)
        with open(f"letters/{row['id']}.txt", "w") as g:
            g.write(out)
EOF
