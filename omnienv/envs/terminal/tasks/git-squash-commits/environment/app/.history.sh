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
mkdir -p lib
printf 'DOCS = ["install", "usage", "faq"]\n' > lib/docs.py
git add lib/docs.py
commit "Add docs index"
printf '# Docs site\n' > README.md
git add README.md
commit "Add readme"
cat > lib/search.py <<'EOF'
from lib.docs import DOCS


def search(query):
    return [d for d in DOCS if query in d]
EOF
git add lib/search.py
as "Kim Park" "kim@example.com"
commit "Add search feature"
sed -i 's/query in d/query.lower() in d/' lib/search.py
git add lib/search.py
commit "fixup: case-insensitive"
cat > lib/search.py <<'EOF'
from lib.docs import DOCS


def search(query):
    query = query.strip().lower()
    if not query:
        return []
    return [d for d in DOCS if query in d]
EOF
git add lib/search.py
commit "fixup: handle empty query"
printf 'from lib.search import search\nassert search("") == []\nassert search(" FAQ") == ["faq"]\n' > test_search.py
git add test_search.py
commit "fixup: tests"
