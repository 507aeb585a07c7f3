#!/bin/bash
set -e
cd /app
cat > rename_photos.sh <<'SHEOF'
#!/bin/bash
export LC_ALL=C
cd -- "$1" || exit 1
for f in IMG_*; do
  [ -f "$f" ] || continue
  if [[ $f =~ ^IMG_([0-9]{4})([0-9]{2})([0-9]{2})_([0-9]{2})([0-9]{2})([0-9]{2})\.([Jj][Pp][Ee]?[Gg])$ ]]; then
    r=("${BASH_REMATCH[@]}")
    b="${r[1]}-${r[2]}-${r[3]}_${r[4]}-${r[5]}-${r[6]}"
    new="$b.jpg"
    k=1
    while [ -e "$new" ]; do new="${b}_$k.jpg"; k=$((k + 1)); done
    mv -- "$f" "$new"
    echo "$f -> $new"
  fi
done
exit 0
SHEOF
chmod +x rename_photos.sh
