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
printf 'name,score\nann,3\n' > data.csv
printf 'print("hello")\n' > main.py
git add data.csv main.py
commit "Initial data and script"
printf 'bob,5\n' >> data.csv
git add data.csv
commit "Add bob"
git checkout -q -b feature/report
cat > report.py <<'EOF'
import csv


def rows(path="data.csv"):
    with open(path) as f:
        return list(csv.DictReader(f))
EOF
git add report.py
as "Kim Park" "kim@example.com"
commit "Report: read rows"
cat >> report.py <<'EOF'


def total(rows):
    return sum(int(r["score"]) for r in rows)
EOF
git add report.py
commit "Report: add total"
cat >> report.py <<'EOF'


def to_csv(rows, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", "score"])
        w.writeheader()
        w.writerows(rows)
EOF
git add report.py
commit "Report: add CSV export"
git checkout -q main
git checkout -q -b experiment
printf 'print("experiment")\n' > main.py
git add main.py
commit "Experiment: louder greeting"
git checkout -q main
as "Dana Lee" "dana@example.com"
printf 'cyd,4\n' >> data.csv
git add data.csv
commit "Add cyd"
git branch -q -D feature/report experiment
