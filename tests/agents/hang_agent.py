#!/usr/bin/env python3
"""Misbehaving agent: reads the start message, then sleeps forever with no output.
Used by the timeout test (the host must kill it when the wall-clock budget expires).
"""
import sys
import time

sys.stdin.readline()
while True:
    time.sleep(3600)
