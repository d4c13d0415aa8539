for f in logs/*.log; do
  printf '%s %s\n' "$(basename "$f")" "$(grep -c 'ERROR' "$f")"
done | sort -k2,2nr -k1,1
