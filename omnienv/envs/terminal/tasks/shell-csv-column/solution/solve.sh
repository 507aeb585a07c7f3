#!/bin/bash
set -e
cd /app
cat > csvcol.sh <<'SHEOF'
#!/bin/bash
file=$1 col=$2
if [ ! -r "$file" ] || [ ! -f "$file" ]; then echo "error: cannot read $file" >&2; exit 2; fi
awk -F, -v col="$col" '
  { sub(/\r$/, "") }
  NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) { k = i; break }
            if (!k) { print "error: no column " col > "/dev/stderr"; bad = 1; exit 1 }
            next }
  $0 == "" { next }
  { print (k <= NF ? $k : "") }' "$file"
SHEOF
chmod +x csvcol.sh
