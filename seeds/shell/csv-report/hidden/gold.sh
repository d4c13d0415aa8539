awk -F, 'NR > 1 { total[$1] += $3 } END { for (r in total) print r "," total[r] }' data/sales.csv \
  | sort > report.txt
sort -t, -k2,2nr report.txt | head -n 1 | cut -d, -f1
