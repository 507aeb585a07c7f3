#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import json, re
data, sec = {}, None
for raw in open("config.ini").read().splitlines():
    s = raw.strip()
    if not s or s[0] in ";#":
        continue
    if s.startswith("[") and s.endswith("]"):
        sec = s[1:-1].strip()
        data.setdefault(sec, {})
        continue
    k, _, v = s.partition("=")
    k, v = k.strip(), v.strip()
    if len(v) >= 2 and v[0] == '"' and v[-1] == '"':
        val = v[1:-1]
    elif re.fullmatch(r"-?[0-9]+", v):
        val = int(v)
    elif v.lower() in ("true", "false"):
        val = v.lower() == "true"
    else:
        val = v
    data[sec][k] = val
json.dump(data, open("config.json", "w"), indent=2)
EOF
