#!/bin/bash
set -e
cd /app
git bisect start main "$(git rev-list --max-parents=0 main)" >/dev/null
git bisect run sh tests/check.sh >/dev/null
git tag first-bad refs/bisect/bad
git bisect reset >/dev/null 2>&1
git checkout -q main
git log -1 --format='%h %s' first-bad
