#!/usr/bin/env bash
# Starts a single-node Kybernetes on the embedded store in the background (make up).
set -euo pipefail

if [ "$(id -u)" -eq 0 ]; then
    data_dir=${KYB_DATA_DIR:-/var/lib/kyb}
else
    data_dir=${KYB_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/kyb}
fi
kyb=${KYB_BIN:-target/release/kyb}
mkdir -p "$data_dir"
pidfile=$data_dir/kyb.pid
log=$data_dir/kyb.log

# A kubeconfig from an earlier run must not be mistaken for readiness.
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    echo "kyb is already running (pid $(cat "$pidfile"), data in $data_dir); 'make down' stops it."
else
    rm -f "$data_dir/kubeconfig.yaml"
    nohup "$kyb" server --data-dir "$data_dir" >"$log" 2>&1 &
    echo $! >"$pidfile"
    deadline=$((SECONDS + 60))
    until [ -f "$data_dir/kubeconfig.yaml" ] && grep -q "kyb server ready" "$log" 2>/dev/null; do
        if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
            echo "kyb server exited; its log ($log) ends with:" >&2
            tail -n 20 "$log" >&2
            exit 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            echo "kyb server not ready after 60 s; see $log" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "kyb server is running (pid $(cat "$pidfile")), data in $data_dir, log in $log."
fi
# The node's containerd gets the project's images (pause is the sandbox image), which
# scripts/images.sh built under target/images/.
socket=$data_dir/agent/containerd/containerd.sock
images=(target/images/pause.tar target/images/busybox.tar)
deadline=$((SECONDS + 15))
until [ -S "$socket" ] || [ $SECONDS -ge $deadline ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; do
    sleep 0.2
done
if [ -S "$socket" ]; then
    "$kyb" image import --data-dir "$data_dir" "${images[@]}" >/dev/null
    echo "Imported ${images[*]} into the node's containerd."
else
    echo "No containerd socket at $socket (node agent disabled?): images not imported."
fi

cat <<EOF

Use it with kubectl:
    export KUBECONFIG=$data_dir/kubeconfig.yaml
    kubectl get nodes
    kubectl create deployment web --image=kyb.local/busybox:1.35.0 -- httpd -f -p 80 -h /etc
    kubectl get pods -o wide

Stop it with: make down
EOF
