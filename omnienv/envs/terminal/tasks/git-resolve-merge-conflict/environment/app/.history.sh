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
printf 'click==8.1.7\nflask==2.3.3\njinja2==3.1.2\n' > requirements.txt
printf 'Changelog\n=========\n' > CHANGES.md
printf 'APP_NAME = "board"\n' > settings.py
git add requirements.txt CHANGES.md settings.py
commit "Initial app"
git checkout -q -b feature
as "Kim Park" "kim@example.com"
printf 'click==8.1.7\nflask==3.0.2\njinja2==3.1.2\nrich==13.7.0\n' > requirements.txt
git add requirements.txt
commit "Upgrade flask, add rich"
printf 'COLOR = True\n' >> settings.py
git add settings.py
commit "Enable colour output"
git checkout -q main
as "Dana Lee" "dana@example.com"
printf 'click==8.1.7\nflask==3.0.0\njinja2==3.1.3\nrequests==2.31.0\n' > requirements.txt
git add requirements.txt
commit "Upgrade flask and jinja2, add requests"
printf 'Changelog\n=========\n- requests support\n' > CHANGES.md
git add CHANGES.md
commit "Update changelog"
