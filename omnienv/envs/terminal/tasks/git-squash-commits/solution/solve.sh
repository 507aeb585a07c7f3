#!/bin/bash
set -e
cd /app
git reset -q --soft HEAD~4
git commit -q -m "Add search feature"
git log --oneline
