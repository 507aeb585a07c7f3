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
cat > pager.py <<'EOF'
def paginate(items, page, per_page=10):
    """Items of 1-based page number `page`."""
    start = page * per_page
    return items[start:start + per_page]


def page_count(n, per_page=10):
    return (n + per_page - 1) // per_page
EOF
printf '1.0.0\n' > VERSION
git add pager.py VERSION
commit "Add pager"
git checkout -q -b release-1.x
printf '1.0.1\n' > VERSION
git add VERSION
commit "Release 1.0.1"
printf 'Changes\n=======\n1.0.1: packaging fixes\n' > CHANGES.txt
git add CHANGES.txt
commit "Add changelog for 1.0.1"
git checkout -q main
as "Kim Park" "kim@example.com"
printf 'def export(items):\n    return ",".join(map(str, items))\n' > export.py
git add export.py
commit "Add CSV export"
printf '2.0.0-dev\n' > VERSION
git add VERSION
commit "Start 2.0 development"
sed -i 's/start = page \* per_page/start = (page - 1) * per_page/' pager.py
git add pager.py
as "Ravi Shah" "ravi@example.com"
commit "Fix off-by-one in paginate()"
cat >> pager.py <<'EOF'


def pages(items, per_page=10):
    return [paginate(items, p, per_page) for p in range(1, page_count(len(items), per_page) + 1)]
EOF
git add pager.py
commit "Add pages() helper"
git branch -m main develop
