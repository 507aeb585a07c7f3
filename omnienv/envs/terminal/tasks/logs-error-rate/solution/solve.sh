#!/bin/bash
set -e
cd /app
{
  echo "hour,errors,warnings"
  grep -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z ' app.log | awk '
    { h = substr($1, 1, 13); if (!(h in seen)) { seen[h] = 1; order[++n] = h }
      if ($2 == "ERROR" || $2 == "FATAL") e[h]++; if ($2 == "WARN") w[h]++ }
    END { for (i = 1; i <= n; i++) { h = order[i]; printf "%s,%d,%d\n", h, e[h], w[h] } }'
} > errors_by_hour.csv
