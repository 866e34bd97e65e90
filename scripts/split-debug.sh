#!/usr/bin/env bash
# Moves a release binary's debug information (line tables and symbols) into BINARY.debug beside it,
# linked by a .gnu_debuglink section, so the binary users run is small while debuggers and
# profilers (gdb, perf, heaptrack) still find the line tables. Idempotent: a binary without
# debug sections is left as it is.
set -euo pipefail

binary=$1
if ! objdump -h "$binary" | grep -q '\.debug_line'; then
    exit 0
fi
rm -f "$binary.debug"
objcopy --only-keep-debug "$binary" "$binary.debug"
objcopy --strip-all --add-gnu-debuglink="$binary.debug" "$binary" "$binary.stripped"
# A new file, not a rewrite in place: cargo's copy is a hard link to its own output.
mv "$binary.stripped" "$binary"
echo "$binary: $(du -m "$binary" | cut -f1) MiB (debug information in $binary.debug)"
