#!/bin/bash
set -e
cd /app
awk '{ gsub(/^[ \t\r]+|[ \t\r]+$/, ""); $0 = tolower($0) } $0 != "" && !seen[$0]++' emails.txt > unique.txt
