#!/usr/bin/env bash
# A RUSTC_WRAPPER for bench/build.sh: runs rustc and appends its CPU time
# ("user sys crate-name") to $EVALUA_RUSTC_LOG, so a build on a loaded machine
# can still say which crates cost what (wall times there say little).
name=-
prev=
for a in "$@"; do
  if [ "$prev" = --crate-name ]; then name=$a; fi
  prev=$a
done
exec /usr/bin/time -a -o "${EVALUA_RUSTC_LOG:?}" -f "%U %S $name" "$@"
