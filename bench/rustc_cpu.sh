#!/usr/bin/env bash
# A RUSTC_WRAPPER for bench/build.sh: runs rustc and appends its CPU time
# ("user sys crate-name package crate-type") to $EVALUA_RUSTC_LOG, so a build
# on a loaded machine can still say which crates cost what (wall times there
# say little). bench/build_replay.py reads the package and crate type to tell
# a package's build script from its library.
name=-
type=-
prev=
for a in "$@"; do
  case $prev in
    --crate-name) name=$a ;;
    --crate-type) type=$a ;;
  esac
  prev=$a
done
exec /usr/bin/time -a -o "${EVALUA_RUSTC_LOG:?}" -f "%U %S $name ${CARGO_PKG_NAME:--} $type" "$@"
