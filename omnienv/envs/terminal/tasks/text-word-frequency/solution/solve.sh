#!/bin/bash
set -e
cd /app
tr -cs 'A-Za-z' '\n' < book.txt | tr 'A-Z' 'a-z' | grep -v '^$' | grep -vxF -f stopwords.txt \
  | sort | uniq -c | awk '{print $1, $2}' | sort -k1,1nr -k2,2 | head -n 10 > top_words.txt
