#!/bin/sh
# Start the tool-API service as its own uid (a boot step), then wait until it answers
# on 127.0.0.1. It holds no backend until the family sends one (the `load` request).
set -eu
HOME_DIR=/var/lib/toolapi
PORT="${TOOLAPI_PORT:-8090}"
umask 077
setsid python3 -I /opt/toolapi/server.py --home "$HOME_DIR" --port "$PORT" \
  </dev/null >/dev/null 2>"$HOME_DIR/server.log" &
i=0
while [ $i -lt 200 ]; do
  if python3 -I -S -c "import socket,sys; s=socket.socket(); s.settimeout(0.2); sys.exit(s.connect_ex(('127.0.0.1', $PORT)))" 2>/dev/null; then
    exit 0
  fi
  if ! kill -0 $! 2>/dev/null; then
    echo "toolapi service exited at start:" >&2
    tail -n 20 "$HOME_DIR/server.log" >&2
    exit 1
  fi
  sleep 0.05
  i=$((i + 1))
done
echo "toolapi service did not answer on port $PORT" >&2
exit 1
