#!/usr/bin/env python3
"""Misbehaving agent: after start, spawns a sleeping child in the same process group (stdio
inherited), appends its own and the child's pid to $EVALUA_TEST_PIDFILE if set, sends final
"parent done" and exits 0 leaving the child; used by the process-group cleanup test.
"""
import os
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the tree free of __pycache__
# The protocol helpers a user copies live with the example agents.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "suites", "agents"))
from evalua_protocol import recv, send  # noqa: E402

recv()
child = subprocess.Popen(
    ["python3", "-c", "import time; time.sleep(600)"],
    start_new_session=False,  # same process group; stdio is inherited on purpose
)
pidfile = os.environ.get("EVALUA_TEST_PIDFILE")
if pidfile:
    try:
        with open(pidfile, "a") as f:
            f.write("%d\n%d\n" % (os.getpid(), child.pid))
    except OSError:
        pass  # in the process sandbox the harness's folder is not there to write
send({"type": "final", "content": "parent done"})
os._exit(0)  # exit without waiting for the child
