#!/usr/bin/env bash
# Install gVisor (Debian's `runsc`) and register it with the Docker engine as the runtime
# `runsc`, so that `gym run --runtime runsc` and `gym redteam --runtime runsc` work.
#   sudo scripts/gvisor.sh              install and register; then reload the engine's
#                                       runtimes with SIGHUP (running containers are kept)
#   sudo scripts/gvisor.sh --restart    ... restart dockerd instead (stops every container:
#                                       only on a machine nobody else uses right now)
#   sudo scripts/gvisor.sh --no-reload  install and register only (takes effect at the
#                                       engine's next start)
# The runtime gets `--network=none`: boxgym's containers have no network, and without
# that argument runsc refuses to start a network-none container ("cannot run with
# network enabled in root network namespace"). Idempotent.
set -euo pipefail

CONFIG="${DOCKER_DAEMON_CONFIG:-/etc/docker/daemon.json}"
PIDFILE="${DOCKER_PIDFILE:-/var/run/docker.pid}"
LOG="${BOXGYM_DOCKERD_LOG:-/var/log/boxgym-dockerd.log}"
MODE="reload"
case "${1:-}" in
  --restart) MODE="restart" ;;
  --no-reload) MODE="none" ;;
  "") ;;
  *) echo "usage: $0 [--restart | --no-reload]" >&2; exit 2 ;;
esac
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

say() { printf '[gvisor] %s\n' "$*" >&2; }

install_runsc() {
  if command -v runsc >/dev/null 2>&1; then return; fi
  say "installing Debian's runsc (gVisor)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq runsc >/dev/null
}

register() {
  local path
  path="$(command -v runsc)"
  $SUDO mkdir -p "$(dirname "$CONFIG")"
  # Merge into the existing configuration (other keys and runtimes are kept).
  $SUDO python3 - "$CONFIG" "$path" <<'EOF'
import json, os, sys
config, path = sys.argv[1], sys.argv[2]
data = json.load(open(config)) if os.path.exists(config) and os.path.getsize(config) else {}
data.setdefault("runtimes", {})["runsc"] = {"path": path, "runtimeArgs": ["--network=none"]}
tmp = config + ".tmp"
with open(tmp, "w") as fh:
    json.dump(data, fh, indent=2)
    fh.write("\n")
os.replace(tmp, config)
EOF
  say "registered runsc ($path) in $CONFIG"
}

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

reload_engine() {
  # dockerd reloads its `runtimes` on SIGHUP without stopping any container.
  $SUDO kill -HUP "$(cat "$PIDFILE")"
  for _ in $(seq 1 20); do
    if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then return; fi
    sleep 0.5
  done
  say "the engine did not load runsc on SIGHUP; try: sudo $0 --restart"
  exit 1
}

restart_engine() {
  local pid
  pid="$(cat "$PIDFILE")"
  say "restarting dockerd (pid $pid): every running container stops"
  $SUDO kill -TERM "$pid"
  for _ in $(seq 1 60); do
    if [ ! -e "/proc/$pid" ]; then break; fi
    sleep 1
  done
  $SUDO setsid nohup dockerd >>"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    if engine_answers; then return; fi
    sleep 1
  done
  say "dockerd did not answer within 60s; last lines of $LOG:"
  tail -n 20 "$LOG" >&2 || true
  exit 1
}

smoke_test() {
  local kernel
  kernel="$(docker run --rm --runtime runsc --network none debian:bookworm-slim uname -r)"
  say "a container under runsc reports kernel $kernel (gVisor's own; the host runs $(uname -r))"
}

install_runsc
register
case "$MODE" in
  reload) reload_engine; smoke_test ;;
  restart) restart_engine; smoke_test ;;
  none) say "restart or SIGHUP dockerd to load it" ;;
esac
