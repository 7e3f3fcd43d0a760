#!/usr/bin/env bash
# Regenerate every trace fixture in tests/fixtures/traces/ and check them.
# Run from anywhere; it works from the repository root. VENV defaults to /opt/tracegen-venv
# (the committed files were made there: the pydantic-ai stack traces name that path).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${VENV:-/opt/tracegen-venv}"
if [ ! -x "$VENV/bin/python" ]; then
  python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q -r tools/tracegen/requirements.txt
fi
PY="$VENV/bin/python"
"$PY" tools/tracegen/refunds_pydantic.py
"$PY" tools/tracegen/refunds_openinference.py
python3 tools/tracegen/homegrown.py
"$PY" tools/tracegen/edge_cases.py
"$PY" tools/tracegen/inspect_traces.py --update-readme
du -sh tests/fixtures/traces
