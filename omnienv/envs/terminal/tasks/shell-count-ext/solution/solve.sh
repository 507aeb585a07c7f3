#!/bin/bash
set -e
cd /app
cat > count_ext.sh <<'SHEOF'
#!/bin/bash
export LC_ALL=C
find "$1" -type f -printf '%f\n' | awk '
  { n = $0; i = 0
    for (j = length(n); j > 0; j--) if (substr(n, j, 1) == ".") { i = j; break }
    if (i <= 1 || i == length(n)) e = "(none)"; else e = tolower(substr(n, i + 1))
    c[e]++ }
  END { for (e in c) print c[e], e }' | sort -k1,1nr -k2,2 | awk '{ print $2, $1 }'
exit 0
SHEOF
chmod +x count_ext.sh
