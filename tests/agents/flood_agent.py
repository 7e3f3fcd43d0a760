#!/usr/bin/env python3
"""Misbehaving agent: after start, writes a 10 MB line with no newline and then endless
'x' lines to stdout while a thread floods stderr; never exits on its own.
Used by the output-limit test (the host must cap line length / captured output and kill it).
"""
import os
import sys
import threading


def flood_stderr():
    chunk = ("e" * 1000 + "\n").encode()
    try:
        while True:
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
    except (BrokenPipeError, OSError):
        os._exit(0)


def main():
    sys.stdin.readline()
    threading.Thread(target=flood_stderr, daemon=True).start()
    out = sys.stdout.buffer
    try:
        out.write(b"y" * (10 * 1024 * 1024))
        out.flush()
        line = b"x" * 1000 + b"\n"
        while True:
            out.write(line)
            out.flush()
    except (BrokenPipeError, OSError):
        pass
    os._exit(0)  # quiet exit: skip interpreter shutdown flushing a dead pipe


if __name__ == "__main__":
    main()
