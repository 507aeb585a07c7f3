#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import csv
seen, out = set(), []
for r in csv.DictReader(open("contacts.csv", newline="")):
    e = r["email"].strip().lower()
    if e.count("@") != 1 or e in seen:
        continue
    seen.add(e)
    name = " ".join(w[:1].upper() + w[1:].lower() for w in r["name"].split())
    d = "".join(c for c in r["phone"] if c.isdigit())
    if len(d) == 11 and d.startswith("1"):
        d = d[1:]
    out.append((name, e, f"{d[:3]}-{d[3:6]}-{d[6:]}" if len(d) == 10 else ""))
with open("contacts_clean.csv", "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["name", "email", "phone"])
    w.writerows(sorted(out, key=lambda r: r[1]))
EOF
