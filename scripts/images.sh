#!/usr/bin/env bash
# Builds the project's images (the sandbox "pause" image and busybox) as OCI archives under
# target/images/, with the given kyb binary. Builds are reproducible: an archive whose
# bytes would not change is left alone (same mtime, same image ID).
# Usage: scripts/images.sh [KYB_BINARY]
set -euo pipefail

kyb=${1:-${KYB_BIN:-target/release/kyb}}
out=${KYB_IMAGES_DIR:-target/images}
mkdir -p "$out"
for image in pause busybox; do
    "$kyb" image build "$image" -o "$out/$image.tar"
done
