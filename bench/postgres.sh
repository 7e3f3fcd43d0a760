#!/usr/bin/env bash
# bench/postgres.sh: the per-trial cost of a PostgreSQL sandbox against SQLite
# (release build), on the throughput benchmark's suite: bench/throughput.lua and
# bench/throughput_pg.lua are the same 100 cases, scripted agent, tools and 6
# checks, on a 1,000-row fixture; only the sandbox differs.
#
#   EVALUA_PG_URL=postgres://user@127.0.0.1:5432/postgres bench/postgres.sh
#   TRIALS=2 ROUNDS=3 (defaults): 200 trials per run, each backend with --jobs 1 and 2
#   (SQLite twice: keeping each trial's changeset, as by default, and with
#   --no-state, since a PostgreSQL run keeps no trial state)
#
# Then, in one psql session, the server's side of one sandbox: CREATE DATABASE …
# TEMPLATE (both strategies) and DROP DATABASE … WITH (FORCE), N=20 each.
# Figures go to stdout; docs/benchmarks.md quotes them. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${EVALUA_PG_URL:?set EVALUA_PG_URL: a PostgreSQL server where the role may CREATE DATABASE}"
trials=${TRIALS:-2}
rounds=${ROUNDS:-3}
[ -n "${NO_BUILD:-}" ] || cargo build --release -q
bin=target/release/evalua
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

run() { # label suite jobs [flags...]
  local label=$1 suite=$2 jobs=$3
  shift 3
  /usr/bin/time -f "%e %U %S" -o "$out/time" "$bin" run "$suite" --trials "$trials" --jobs "$jobs" --out "$out/$label" -q "$@" >/dev/null || true
  read -r wall user sys <"$out/time"
  rm -rf "${out:?}/$label"
  local n=$((trials * 100))
  printf '%-16s --jobs %d  %4d trials  %6.2f s  %7.2f ms/trial  (evalua CPU %.2f s)\n' \
    "$label" "$jobs" "$n" "$wall" "$(echo "$wall * 1000 / $n" | bc -l)" "$(echo "$user + $sys" | bc -l)"
}

run warmup bench/throughput_pg.lua 2 >/dev/null
for _ in $(seq "$rounds"); do
  for jobs in 1 2; do
    run sqlite bench/throughput.lua "$jobs"
    # A PostgreSQL run keeps no trial state; SQLite without it, for a like-for-like row.
    run sqlite-no-state bench/throughput.lua "$jobs" --no-state
    run postgres bench/throughput_pg.lua "$jobs"
  done
done

if ! command -v psql >/dev/null; then
  echo "(no psql: skipping the server-side breakdown)"
  exit 0
fi
# The server's side: a template loaded with the benchmark's fixture, then N copies and drops.
n=20
{
  echo '\set maint :DBNAME'
  echo 'DROP DATABASE IF EXISTS evalua_bench_tmpl;'
  echo 'CREATE DATABASE evalua_bench_tmpl TEMPLATE template0;'
  echo '\c evalua_bench_tmpl'
  echo 'SET client_min_messages = warning;'
  cat bench/fixtures/items_1000_pg.sql
  echo '\c :maint'
  echo '\timing on'
  for strategy in WAL_LOG FILE_COPY; do
    for i in $(seq "$n"); do
      echo "\\echo create $strategy"
      echo "CREATE DATABASE evalua_bench_copy TEMPLATE evalua_bench_tmpl STRATEGY $strategy;"
      echo "\\echo drop $strategy"
      echo "DROP DATABASE evalua_bench_copy WITH (FORCE);"
    done
  done
  echo '\timing off'
  echo 'DROP DATABASE evalua_bench_tmpl;'
} | psql "$EVALUA_PG_URL" -q -X 2>&1 | awk '
  /^create|^drop/ { what = $1 " " $2; next }
  /^Time:/ { sum[what] += $2; cnt[what]++ }
  END { for (w in sum) printf "%-20s %6.1f ms (mean of %d)\n", w, sum[w] / cnt[w], cnt[w] }' | sort
