#!/bin/bash
set -e
cd /app
export FILTER_BRANCH_SQUELCH_WARNING=1
git filter-branch -f --index-filter 'git rm -q --cached --ignore-unmatch config/secrets.env' \
  --tag-name-filter cat -- --all
git for-each-ref --format='%(refname)' refs/original/ | while read -r ref; do git update-ref -d "$ref"; done
git reflog expire --expire=now --all
git gc -q --prune=now
