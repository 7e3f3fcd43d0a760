#!/usr/bin/env python3
"""Misbehaving agent: after start, prints a non-JSON line (or, with argv "unknown", a valid
JSON object of unknown type {"type":"dance"}) and then idles in 30 s sleeps.
Used by the protocol-error test (the host must record a protocol error and stop it).
"""
import json
import sys
import time

sys.stdin.readline()
if len(sys.argv) > 1 and sys.argv[1] == "unknown":
    sys.stdout.write(json.dumps({"type": "dance", "steps": 3}) + "\n")
else:
    sys.stdout.write("this is not json {\n")
sys.stdout.flush()
while True:
    time.sleep(30)
