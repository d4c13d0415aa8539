#!/usr/bin/env bash
# Make a Docker engine answer and the base image exist, on a fresh Debian machine.
#   - installs Debian's docker.io (and debootstrap) when no engine is installed;
#   - starts dockerd in the background when none answers (no init system needed);
#   - provides debian:bookworm-slim: pulled when a registry answers, otherwise built
#     with debootstrap (minbase) and imported under that same tag.
# Idempotent: a second run does nothing but check. Needs root (or sudo) for the engine.
set -euo pipefail

BASE_IMAGE="debian:bookworm-slim"
LOG="${BOXGYM_DOCKERD_LOG:-/var/log/boxgym-dockerd.log}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

say() { printf '[engine] %s\n' "$*" >&2; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

install_engine() {
  if command -v dockerd >/dev/null 2>&1; then return; fi
  say "installing Debian's docker.io (Docker engine)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq docker.io >/dev/null
}

start_engine() {
  say "starting dockerd in the background (log: $LOG)"
  $SUDO mkdir -p "$(dirname "$LOG")"
  # setsid: the engine must outlive this script and the shell that ran it.
  $SUDO setsid nohup dockerd >"$LOG" 2>&1 </dev/null &
  for _ in $(seq 1 60); do
    if engine_answers; then return; fi
    sleep 1
  done
  say "dockerd did not answer within 60s; last lines of $LOG:"
  tail -n 20 "$LOG" >&2 || true
  exit 1
}

base_image() {
  if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then return; fi
  if timeout 30 docker pull -q "$BASE_IMAGE" >/dev/null 2>&1; then
    say "pulled $BASE_IMAGE"
    return
  fi
  say "no registry answers; building $BASE_IMAGE with debootstrap (about 30 s)"
  if ! command -v debootstrap >/dev/null 2>&1; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq debootstrap >/dev/null
  fi
  local dir
  dir="$(mktemp -d /tmp/boxgym-rootfs.XXXXXX)"
  $SUDO debootstrap --variant=minbase bookworm "$dir" http://deb.debian.org/debian >/dev/null
  $SUDO rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  $SUDO tar -C "$dir" -c . | docker import -c 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  $SUDO rm -rf "$dir"
  say "imported $BASE_IMAGE"
}

if ! engine_answers; then
  install_engine
  engine_answers || start_engine
fi
base_image
say "engine $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})') ready; $BASE_IMAGE present"
