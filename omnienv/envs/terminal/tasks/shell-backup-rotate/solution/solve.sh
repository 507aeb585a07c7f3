#!/bin/bash
set -e
cd /app
cat > rotate.sh <<'SHEOF'
#!/bin/bash
export LC_ALL=C
dir=$1 n=$2
if [ ! -d "$dir" ]; then echo "rotate.sh: not a directory: $dir" >&2; exit 2; fi
if ! [[ $n =~ ^[0-9]+$ ]]; then echo "rotate.sh: invalid count: $n" >&2; exit 2; fi
mapfile -t all < <(cd "$dir" && for f in backup-*.tar.gz; do
  [[ -f $f && $f =~ ^backup-[0-9]{8}\.tar\.gz$ ]] && echo "$f"; done | sort)
del=$(( ${#all[@]} - 10#$n ))
for ((i = 0; i < del; i++)); do
  rm -f -- "$dir/${all[i]}"
  echo "${all[i]}"
done
exit 0
SHEOF
chmod +x rotate.sh
