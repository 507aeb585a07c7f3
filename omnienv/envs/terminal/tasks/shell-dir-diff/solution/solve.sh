#!/bin/bash
set -e
cd /app
cat > dirdiff.sh <<'SHEOF'
#!/bin/bash
export LC_ALL=C
a=$1 b=$2
list() { (cd "$1" && find . -type f -printf '%P\n'); }
out=$(
  { list "$a" | sed 's/^/a\t/'; list "$b" | sed 's/^/b\t/'; } | sort -t$'\t' -k2,2 -k1,1 |
  awk -F'\t' '{ p = $2; seen[p] = seen[p] $1; if (!(p in ord)) { ord[p] = ++n; path[n] = p } }
    END { for (i = 1; i <= n; i++) print seen[path[i]] "\t" path[i] }' |
  while IFS=$'\t' read -r where p; do
    case $where in
      a) echo "only-in-a $p" ;;
      b) echo "only-in-b $p" ;;
      *) cmp -s -- "$a/$p" "$b/$p" || echo "differs $p" ;;
    esac
  done
)
[ -z "$out" ] && exit 0
printf '%s\n' "$out"
exit 1
SHEOF
chmod +x dirdiff.sh
