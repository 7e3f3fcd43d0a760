#!/usr/bin/env bash
# A C compiler wrapper for bench/build.sh (CC=bench/cc_cpu.sh): runs the real
# compiler ($EVALUA_REAL_CC, an absolute path) and appends its CPU time
# ("user sys cc package -") to $EVALUA_RUSTC_LOG. The build scripts' C
# (SQLite, Lua, ring, mimalloc) is then counted per package, like rustc's.
real=${EVALUA_REAL_CC:?EVALUA_REAL_CC: the real C compiler}
# Never run ourselves (CC pointing back here would fork without end).
if [ "$(readlink -f "$real")" = "$(readlink -f "$0")" ]; then
  echo "cc_cpu.sh: EVALUA_REAL_CC is this wrapper" >&2
  exit 2
fi
exec /usr/bin/time -a -o "${EVALUA_RUSTC_LOG:?}" -f "%U %S cc ${CARGO_PKG_NAME:--} -" "$real" "$@"
