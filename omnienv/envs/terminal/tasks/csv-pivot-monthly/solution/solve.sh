#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import csv
from decimal import Decimal
rows = list(csv.DictReader(open("transactions.csv", newline="")))
months = sorted({r["date"][:7] for r in rows})
piv = {}
for r in rows:
    cell = piv.setdefault(r["category"], {})
    cell[r["date"][:7]] = cell.get(r["date"][:7], Decimal(0)) + Decimal(r["amount"])
with open("pivot.csv", "w") as f:
    f.write("category," + ",".join(months) + ",total\n")
    col = {m: Decimal(0) for m in months}
    for c in sorted(piv):
        vals = [piv[c].get(m, Decimal(0)) for m in months]
        for m, v in zip(months, vals):
            col[m] += v
        f.write(c + "," + ",".join(f"{v:.2f}" for v in vals) + f",{sum(vals):.2f}\n")
    f.write("TOTAL," + ",".join(f"{col[m]:.2f}" for m in months) + f",{sum(col.values()):.2f}\n")
EOF
