#!/usr/bin/env bash
# Stops the server 'make up' started.
set -euo pipefail

if [ "$(id -u)" -eq 0 ]; then
    data_dir=${KYB_DATA_DIR:-/var/lib/kyb}
else
    data_dir=${KYB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/kyb}
fi
pidfile=$data_dir/kyb.pid
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    pid=$(cat "$pidfile")
    kill -TERM "$pid"
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "kyb (pid $pid) did not stop within 10 s" >&2
        exit 1
    fi
    echo "kyb stopped."
else
    echo "kyb is not running."
fi
rm -f "$pidfile"
