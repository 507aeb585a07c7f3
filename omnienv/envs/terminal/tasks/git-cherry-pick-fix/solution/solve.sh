#!/bin/bash
set -e
cd /app
fix=$(git log --format='%H %s' develop | awk '/ Fix off-by-one in paginate\(\)$/ {print $1; exit}')
git checkout -q release-1.x
git cherry-pick -x "$fix"
git log --oneline -3
