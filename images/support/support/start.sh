#!/bin/sh
# Start the support service as its own uid (a boot step): fresh copy of the seed
# database, an empty audit log, then wait until it answers on 127.0.0.1.
set -eu
DATA=/var/lib/support
PORT="${SUPPORT_PORT:-8080}"
umask 077
cp /opt/support/seed.db "$DATA/support.db"
chmod 0600 "$DATA/support.db"
: > "$DATA/audit.jsonl"
cd /opt/support
setsid python3 -I /opt/support/server.py --db "$DATA/support.db" --audit "$DATA/audit.jsonl" \
  --port "$PORT" </dev/null >/dev/null 2>"$DATA/server.log" &
i=0
while [ $i -lt 100 ]; do
  if python3 -I -S -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))" 2>/dev/null; then
    exit 0
  fi
  if ! kill -0 $! 2>/dev/null; then
    echo "support service exited at start:" >&2
    tail -n 20 "$DATA/server.log" >&2
    exit 1
  fi
  sleep 0.05
  i=$((i + 1))
done
echo "support service did not answer on port $PORT" >&2
exit 1
