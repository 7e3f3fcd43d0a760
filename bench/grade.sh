#!/usr/bin/env bash
# bench/grade.sh: `evalua grade` throughput and peak memory on 10,000 recorded
# items (release build). Three inputs, each graded with --jobs 2:
#
#   evalua    a 10,000-trial run of bench/throughput.lua exported with --otlp-file:
#             evalua's own GenAI spans (4 spans per item), graded with
#             bench/throughput.lua (each item names its case: 4 trajectory checks
#             run, the 2 database checks are not applicable)
#   run_dir   the same run dir graded directly (its traces, no spans)
#   pydantic  10,000 pydantic-ai conversations: tests/fixtures/traces/pydantic_ai/
#             refunds_prod.otlp.jsonl repeated with fresh ids (about 330 MB of OTLP
#             JSON; each chat span repeats the conversation), graded with
#             suites/refunds.lua's four monitors
#
# Flat memory: the same inputs cut to 2,500 items, to compare peaks.
# Not a test: figures go to docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q
bin=target/release/evalua
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

grade() { # name suite items input...
  local name=$1 suite=$2 items=$3; shift 3
  /usr/bin/time -f "%e %M %U %S" -o "$out/t" "$bin" grade "$suite" --traces "$@" --jobs 2 -q --out "$out/g-$name" >/dev/null 2>"$out/err" || true
  read -r secs kb usr sys < <(tail -1 "$out/t")
  local n; n=$(wc -l < "$out/g-$name/trials.jsonl")
  [ "$n" -eq "$items" ] || { echo "$name: graded $n of $items items"; cat "$out/err" | head -5; }
  printf '%-16s %6d items  %6.2f s  %7.0f items/s  CPU %6.2f s (%6.0f items per CPU s)  peak RSS %6.1f MB\n' "$name" "$n" \
    "$secs" "$(echo "$n / $secs" | bc -l)" "$(echo "$usr + $sys" | bc -l)" "$(echo "$n / ($usr + $sys)" | bc -l)" \
    "$(echo "$kb / 1024" | bc -l)"
  rm -rf "$out/g-$name"
}

echo "making the inputs…"
"$bin" run bench/throughput.lua --trials 100 --jobs 2 -q --out "$out/run" --otlp-file "$out/evalua.otlp.jsonl" >/dev/null || true
"$bin" run bench/throughput.lua --trials 25 --jobs 2 -q --out "$out/run_small" --otlp-file "$out/evalua_small.otlp.jsonl" >/dev/null || true
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
src = open("tests/fixtures/traces/pydantic_ai/refunds_prod.otlp.jsonl").read().splitlines()
ids = re.compile(r'"(traceId|spanId|parentSpanId)":"([0-9a-f]{8})')
conv = re.compile(r'("key":"gen_ai.conversation.id","value":\{"stringValue":")([0-9a-f]{8})')
def write(path, conversations):
    copies = -(-conversations // 29)
    with open(path, "w") as f:
        for n in range(1, copies + 1):
            for line in src:
                line = ids.sub(lambda m: '"%s":"%08x' % (m.group(1), n), line)
                f.write(conv.sub(lambda m: "%s%08x" % (m.group(1), n), line) + "\n")
    return copies * 29
print("pydantic items:", write(out + "/pydantic.otlp.jsonl", 10000), write(out + "/pydantic_small.otlp.jsonl", 2500))
PY
ls -l "$out"/*.jsonl | awk '{printf "  %-40s %6.0f MB\n", $NF, $5/1e6}'
big=$(( $(wc -l < "$out/run/trials.jsonl") ))
small=$(( $(wc -l < "$out/run_small/trials.jsonl") ))
pyd=10005; pyd_small=2523

for round in $(seq "${ROUNDS:-3}"); do
  echo "round $round"
  grade evalua bench/throughput.lua "$big" "$out/evalua.otlp.jsonl"
  grade run_dir bench/throughput.lua "$big" "$out/run"
  grade pydantic suites/refunds.lua "$pyd" "$out/pydantic.otlp.jsonl"
done
echo "2,500 items (flat memory):"
grade evalua_2500 bench/throughput.lua "$small" "$out/evalua_small.otlp.jsonl"
grade run_dir_2500 bench/throughput.lua "$small" "$out/run_small"
grade pydantic_2523 suites/refunds.lua "$pyd_small" "$out/pydantic_small.otlp.jsonl"
