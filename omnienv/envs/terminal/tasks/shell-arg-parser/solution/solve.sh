#!/bin/bash
set -e
cd /app
cat > greet.sh <<'SHEOF'
#!/bin/bash
name=world count=1 upper=0 words=()
die() { echo "greet.sh: $1" >&2; exit 2; }
while [ $# -gt 0 ]; do
  a=$1; shift
  case $a in
    -h|--help) echo "usage: greet.sh [-n NAME] [-c COUNT] [-u] [MESSAGE...]"; exit 0 ;;
    -n|--name|-c|--count)
      [ $# -gt 0 ] || die "missing value for $a"
      v=$1; shift
      case $a in -n|--name) a="--name=$v" ;; *) a="--count=$v" ;; esac ;;
  esac
  case $a in
    --name=*) name=${a#--name=} ;;
    --count=*) count=${a#--count=}; [[ $count =~ ^[1-9][0-9]*$ ]] || die "invalid count: $count" ;;
    -u|--upper) upper=1 ;;
    --) words+=("$@"); break ;;
    -) words+=("$a") ;;
    -*) die "unknown option: $a" ;;
    *) words+=("$a") ;;
  esac
done
line="Hello, $name!"
[ ${#words[@]} -gt 0 ] && line="$line ${words[*]}"
[ $upper = 1 ] && line=${line^^}
for ((i = 0; i < count; i++)); do printf '%s\n' "$line"; done
exit 0
SHEOF
chmod +x greet.sh
