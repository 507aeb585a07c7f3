#!/bin/bash
set -e
cd /app
git checkout -q main
git merge --no-edit feature || true
printf 'click==8.1.7\nflask==3.0.2\njinja2==3.1.3\nrequests==2.31.0\nrich==13.7.0\n' > requirements.txt
git add requirements.txt
git commit -q --no-edit
git log --oneline --graph -6
