#!/bin/bash
set -e
cd /app
cd src
find . -name '*.py' -type f | sed 's|^\./||' | LC_ALL=C sort | while read -r f; do
  grep -nE '#[[:space:]]*TODO(\([A-Za-z0-9_]+\))?:' "$f" | while IFS= read -r hit; do
    n=${hit%%:*}; line=${hit#*:}
    printf '%s\n' "$line" | sed -E 's/.*#[[:space:]]*TODO(\(([A-Za-z0-9_]+)\))?:[[:space:]]*(.*)$/\2\t\3/' \
      | awk -F'\t' -v f="$f" -v n="$n" '{o=$1; if (o=="") o="-"; t=$2; sub(/[ \t]+$/, "", t); printf "%s\t%s\t%s\t%s\n", f, n, o, t}'
  done
done > ../todos.tsv
