#!/usr/bin/env bash
# Installs what building and testing Kybernetes needs on Debian 12; quiet when all is there.
# Usage: scripts/deps.sh PACKAGE...
set -euo pipefail

missing=()
for package in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "make deps: installing ${missing[*]}"
    $sudo apt-get update -qq
    # Package scripts must not start services (etcd, containerd, docker-registry) on the
    # machine: tests and the node agent start their own.
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    $sudo rm -f /usr/sbin/policy-rc.d
    # Nor at the next boot: the machine's own containerd would compete with the agent's.
    if [ -d /run/systemd/system ]; then
        $sudo systemctl disable containerd.service docker-registry.service >/dev/null 2>&1 || true
    fi
fi

if ! command -v cargo >/dev/null; then
    echo "make deps: cargo (Rust) is not installed; see https://rustup.rs" >&2
    exit 1
fi
if ! cargo nextest --version >/dev/null 2>&1; then
    echo "make deps: installing cargo-nextest"
    cargo install --locked --quiet cargo-nextest
fi
