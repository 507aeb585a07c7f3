#!/bin/bash
set -e
cd /app
python3 - <<'EOF'
import re
lines = open("README.md").read().split("\n")
fence, used, toc = False, {}, []
for l in lines:
    if l.startswith("```"):
        fence = not fence
        continue
    m = None if fence else re.match(r"(##|###) (.*)$", l)
    if m:
        title = m.group(2).strip()
        a = re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")
        n = used.get(a, 0)
        used[a] = n + 1
        toc.append(("  " if m.group(1) == "###" else "") + f"- [{title}](#{a if n == 0 else f'{a}-{n}'})")
i, j = lines.index("<!-- toc -->"), lines.index("<!-- tocstop -->")
open("README.md", "w").write("\n".join(lines[:i + 1] + toc + lines[j:]))
EOF
