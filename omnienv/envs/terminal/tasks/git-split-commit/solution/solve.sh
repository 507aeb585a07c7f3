#!/bin/bash
set -e
cd /app
git reset -q HEAD~1
git add parser.py
git commit -q -m "Add parser"
git add README.md docs/usage.md
git commit -q -m "Update docs"
git log --oneline
