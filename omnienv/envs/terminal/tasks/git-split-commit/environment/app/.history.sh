#!/bin/bash
# Builds this task's git history with fixed identities and dates (run once at setup).
set -e
git init -q -b main
git config commit.gpgsign false
export GIT_AUTHOR_NAME="Dana Lee" GIT_AUTHOR_EMAIL="dana@example.com"
export GIT_COMMITTER_NAME="Dana Lee" GIT_COMMITTER_EMAIL="dana@example.com"
T=1709251200
commit() {
  T=$((T + 5400))
  GIT_AUTHOR_DATE="$T +0000" GIT_COMMITTER_DATE="$T +0000" git commit -q -m "$1"
}
as() {  # as NAME EMAIL: switch the author for the following commits
  export GIT_AUTHOR_NAME="$1" GIT_AUTHOR_EMAIL="$2"
}
mkdir -p docs
printf '# tinyconf\nReads key=value files.\n' > README.md
git add README.md
commit "Initial commit"
printf 'def load(path):\n    raise NotImplementedError\n' > tinyconf.py
git add tinyconf.py
commit "Add loader stub"
cat > parser.py <<'EOF'
def parse(text):
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out
EOF
printf '# tinyconf\nReads key=value files; see docs/usage.md.\n' > README.md
printf '# Usage\n\n    from parser import parse\n    parse(open("app.conf").read())\n' > docs/usage.md
git add parser.py README.md docs/usage.md
as "Kim Park" "kim@example.com"
commit "Add parser and update docs"
