#!/bin/bash
set -e
cd /app
cat > iniget.sh <<'SHEOF'
#!/bin/bash
file=$1 sec=$2 key=$3
if [ ! -f "$file" ] || [ ! -r "$file" ]; then echo "iniget.sh: cannot read $file" >&2; exit 2; fi
awk -v sec="$sec" -v key="$key" '
  function trim(s) { sub(/^[ \t\r]+/, "", s); sub(/[ \t\r]+$/, "", s); return s }
  { line = trim($0) }
  line == "" || line ~ /^[;#]/ { next }
  line ~ /^\[.*\]$/ { cur = trim(substr(line, 2, length(line) - 2)); insec = 1; next }
  index(line, "=") == 0 { next }
  { i = index(line, "="); k = trim(substr(line, 1, i - 1)); v = trim(substr(line, i + 1))
    if (insec && cur == sec && k == key) { val = v; found = 1 } }
  END { if (found) { print val; exit 0 } exit 1 }' "$file"
SHEOF
chmod +x iniget.sh
