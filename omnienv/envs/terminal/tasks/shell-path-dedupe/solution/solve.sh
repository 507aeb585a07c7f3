#!/bin/bash
set -e
cd /app
cat > pathclean.sh <<'SHEOF'
#!/bin/bash
drop=0
[ "$2" = "--drop-missing" ] && drop=1
IFS=: read -r -a parts <<< "$1:"
out=() seen=:
for e in "${parts[@]}"; do
  [ -z "$e" ] && continue
  while [ "$e" != "/" ] && [ "${e%/}" != "$e" ]; do e=${e%/}; [ -z "$e" ] && e=/; done
  [ $drop = 1 ] && [ ! -d "$e" ] && continue
  case $seen in *":$e:"*) continue ;; esac
  seen="$seen$e:"
  out+=("$e")
done
(IFS=:; printf '%s\n' "${out[*]}")
SHEOF
chmod +x pathclean.sh
