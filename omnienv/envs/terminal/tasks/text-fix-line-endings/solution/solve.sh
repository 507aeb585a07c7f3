#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import pathlib
for p in sorted(pathlib.Path("docs").rglob("*")):
    if p.is_file() and p.suffix in (".md", ".txt"):
        s = p.read_bytes().decode()
        s = s.replace("\r\n", "\n").replace("\r", "\n")
        s = "\n".join(l.rstrip(" \t") for l in s.split("\n")).rstrip("\n") + "\n"
        p.write_bytes(s.encode())
EOF
