#!/bin/bash
set -e
cd /app
tip=$(git log -g --format='%H %s' HEAD | awk '$0 ~ / Report: add CSV export$/ {print $1; exit}')
git branch feature/report "$tip"
git log --oneline -3 feature/report
