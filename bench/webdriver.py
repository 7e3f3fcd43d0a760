"""A minimal WebDriver client for the bench scripts that drive Chromium (bench/view.sh, bench/labels.sh).

    with WebDriver(port) as d:
        s = d.session(profile_dir)       # headless Chromium, its own profile
        d.go(s, url); d.js(s, "return 1"); d.key(s, "n"); d.close(s)

Only the standard library: the bench machine has chromedriver and Chromium, nothing else.
"""
import json
import subprocess
import time
import urllib.request

CHROME_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking"]


class WebDriver:
    def __init__(self, port):
        self.port = port
        self.proc = subprocess.Popen(["chromedriver", "--port=%d" % port],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                self.call("GET", "/status")
                break
            except Exception:
                time.sleep(0.1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()

    def call(self, method, path, body=None):
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req, timeout=120))["value"]

    def session(self, profile_dir):
        caps = {"browserName": "chrome",
                "goog:chromeOptions": {"args": CHROME_ARGS + ["--user-data-dir=%s" % profile_dir]}}
        return self.call("POST", "/session", {"capabilities": {"alwaysMatch": caps}})["sessionId"]

    def go(self, s, url):
        self.call("POST", "/session/%s/url" % s, {"url": url})

    def js(self, s, src):
        return self.call("POST", "/session/%s/execute/sync" % s, {"script": src, "args": []})

    def key(self, s, k):
        self.call("POST", "/session/%s/actions" % s, {"actions": [{"type": "key", "id": "kb", "actions":
            [{"type": "keyDown", "value": k}, {"type": "keyUp", "value": k}]}]})

    def close(self, s):
        self.call("DELETE", "/session/%s" % s)
