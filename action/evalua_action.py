#!/usr/bin/env python3
"""The script behind evalua's GitHub Action (action.yml at the repository root).

Each step of the composite action calls one subcommand; all of them read their
inputs from the environment (the action maps `inputs.*` to `EVALUA_*` variables)
and the GitHub runner's own variables (GITHUB_*). Standard library only: the
runner's python3 is enough.

  version         the evalua version to install ($EVALUA_VERSION, else the action's own
                  Cargo.toml) -> outputs `version`, `cache-dir` (for the actions/cache step)
  install         a given binary ($EVALUA_GIVEN_BIN), or `pip install` of $EVALUA_WHEEL, or
                  evalua $version: the copy the cache kept, else its prebuilt wheel
                  (`pip install evalua==V --only-binary :all:`, from pip's index: PyPI or
                  $PIP_INDEX_URL / $PIP_FIND_LINKS), else the action's source built with
                  cargo; what was installed is kept in the cache -> EVALUA_BIN in $GITHUB_ENV
  find-baseline   the newest artifact named $EVALUA_BASELINE_ARTIFACT of a run of this
                  repository (never a fork's) on the base branch, of a push (or of the
                  workflow $EVALUA_BASELINE_WORKFLOW names) -> outputs `run-id` (empty when
                  there is none) and `note` (why there is none, for the comment)
  run             evalua run for each suite (with --baseline when one is given)
                  -> outputs `exit-code` (the worst of the runs), `run-dirs`
  comment         the body from `evalua report RUN_DIR --format github`, into
                  $GITHUB_STEP_SUMMARY and, on a pull request, into ONE sticky comment
                  (created the first time, updated after), through the REST API
  conclude        exit with the runs' exit code: the job fails exactly when a gate failed
                  (or evalua could not run)

The token is never printed: it goes only into the Authorization header, and
error messages carry the status and GitHub's message (with the token cut out,
should GitHub ever echo it), never a request's headers. (No `::add-mask::`
either: that would print it, and the runner masks its own tokens and secrets.)
Without a token, or with one that may not write (a pull request from a fork),
the comment step says so and leaves the result in the step summary only; it
never fails the job.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

MARKER_PREFIX = "<!-- evalua-action:"
# A comment body may hold 65,536 characters; keep room for the marker and a note.
MAX_BODY = 65000


def env(name, default=""):
    v = os.environ.get(name)
    return default if v is None else v


def log_text(text):
    """Text for the job's log, inert (one function for every line this script logs): no ESC,
    BEL or other control character (shown as \\xNN), and no line the runner would take for a
    workflow command (`::set-output::`, `::add-mask::`, `##[group]`, …, also after spaces)."""
    out = []
    for line in str(text).split("\n"):
        line = "".join(c if c == "\t" or (ord(c) >= 32 and ord(c) != 127) else "\\x%02x" % ord(c) for c in line)
        if line.lstrip().startswith(("::", "##[")):
            line = "\\" + line
        out.append(line)
    return "\n".join(out)


def md_text(text):
    """Text for the comment and the step summary (GitHub Markdown), inert as evalua's own
    (src/util/inert.rs): what could open a link, an image, HTML, a code span or fence, a table
    cell or math is a numeric character reference, and a word joiner (U+2060) follows `@`, `#`
    and a scheme's `:` and splits `www.` (no mention, reference or autolink); one line."""
    s = log_text(text).replace("\n", " ")
    out = []
    for i, c in enumerate(s):
        out.append("&#%d;" % ord(c) if c in "\\`[]<>|&$" else c)
        scheme = c == ":" and s[i + 1:i + 3] == "//"
        if c in "@#" or scheme or (c in "wW" and s[max(0, i - 2):i + 1].lower() == "www" and s[i + 1:i + 2] == "."):
            out.append("\u2060")
    return "".join(out)


def log(msg):
    print(log_text(msg), file=sys.stderr, flush=True)


def warn(msg):
    # A workflow command: shown as an annotation on the run.
    print("::warning::" + log_text(msg).replace("\n", " "), flush=True)


def set_output(name, value):
    path = env("GITHUB_OUTPUT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        if "\n" in value:
            f.write("%s<<EVALUA_EOF\n%s\nEVALUA_EOF\n" % (name, value))
        else:
            f.write("%s=%s\n" % (name, value))


def append_summary(text):
    path = env("GITHUB_STEP_SUMMARY")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)
        if not text.endswith("\n"):
            f.write("\n")


def evalua_bin():
    return env("EVALUA_BIN", "evalua") or "evalua"


def runs_root():
    return env("EVALUA_RUNS_DIR") or os.path.join(env("RUNNER_TEMP", ".") or ".", "evalua-runs")


def suites():
    text = env("EVALUA_SUITES")
    return [s for s in text.replace(",", "\n").split() if s]


def stem(suite):
    base = os.path.basename(suite)
    return base[:-4] if base.endswith(".lua") else base


def out_dirs(suite_list):
    """One run dir per suite under the runs root, named after the suite file (made unique)."""
    seen = {}
    dirs = []
    for s in suite_list:
        name = stem(s)
        n = seen.get(name, 0)
        seen[name] = n + 1
        dirs.append(os.path.join(runs_root(), name if n == 0 else "%s-%d" % (name, n + 1)))
    return dirs


def baseline_for(base, out_dir, single):
    """The baseline run dir of one suite: BASE/<name> (the same layout this action
    uploads), or BASE itself when it is a run dir and only one suite runs."""
    if not base:
        return None
    candidate = os.path.join(base, os.path.basename(out_dir))
    if os.path.isfile(os.path.join(candidate, "manifest.json")):
        return candidate
    if single and os.path.isfile(os.path.join(base, "manifest.json")):
        return base
    # A downloaded artifact may hold the runs root one level down.
    for sub in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        nested = os.path.join(base, sub, os.path.basename(out_dir))
        if os.path.isfile(os.path.join(nested, "manifest.json")):
            return nested
    return None


# ------------------------------------------------------------------------------------------
# GitHub REST API


class ApiError(Exception):
    def __init__(self, status, message):
        super().__init__("HTTP %s: %s" % (status, message))
        self.status = status


def api(method, path, token, body=None):
    base = env("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    url = path if path.startswith("http") else base + path
    data = None if body is None else json.dumps(body).encode("utf-8")
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Accept", "application/vnd.github+json")
    req.add_header("X-GitHub-Api-Version", "2022-11-28")
    req.add_header("User-Agent", "evalua-action")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
            return json.loads(raw.decode("utf-8")) if raw else None, resp.headers
    except urllib.error.HTTPError as e:
        try:
            msg = json.loads(e.read().decode("utf-8")).get("message", "")
        except Exception:
            msg = e.reason or ""
        raise ApiError(e.code, scrub(str(msg), token)) from None
    except (urllib.error.URLError, OSError) as e:
        raise ApiError("-", scrub(str(getattr(e, "reason", e)), token)) from None


def scrub(text, token):
    return text.replace(token, "***") if token else text


def next_link(headers):
    for part in (headers.get("Link") or "").split(","):
        seg = part.split(";")
        if len(seg) >= 2 and 'rel="next"' in seg[1]:
            return seg[0].strip().strip("<>")
    return None


def event():
    path = env("GITHUB_EVENT_PATH")
    if not path or not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def pull_number(ev):
    pr = ev.get("pull_request") or {}
    return pr.get("number") or (ev.get("number") if "pull_request" in ev else None)


# ------------------------------------------------------------------------------------------
# Subcommands


def baseline_refusal(run, repo, branch, workflow):
    """Why a workflow run may not supply the baseline (None: it may). Only a run of the base
    repository itself (not a fork's head repository: a fork may name its branch `main` too),
    on the base branch, of a push (or of the workflow the user names): anything else ran code
    someone outside the repository chose, and its report would speak in the bot's comment."""
    if (run.get("repository") or {}).get("full_name") != repo:
        return "a run of another repository"
    if (run.get("head_repository") or {}).get("full_name") != repo:
        return "a run of a fork's pull request"
    if run.get("head_branch") != branch:
        return "a run on another branch"
    ev = run.get("event") or ""
    if workflow:
        names = (os.path.basename(run.get("path") or ""), run.get("name") or "")
        if workflow not in names:
            return "a run of another workflow than %s" % workflow
        if ev.startswith("pull_request"):
            return "a run of a %s event" % ev
    elif ev != "push":
        return "a run of a %s event, not a push" % (ev or "unknown")
    return None


def cmd_find_baseline():
    token = env("EVALUA_TOKEN")
    name = env("EVALUA_BASELINE_ARTIFACT")
    workflow = env("EVALUA_BASELINE_WORKFLOW").strip()
    repo = env("GITHUB_REPOSITORY")
    ev = event()
    branch = env("EVALUA_BASELINE_BRANCH") or ((ev.get("pull_request") or {}).get("base") or {}).get("ref") or ""
    if not branch:
        branch = (ev.get("repository") or {}).get("default_branch") or ""
    set_output("run-id", "")
    set_output("note", "")
    if not (name and repo):
        return 0

    def none(why):
        # Said in the log and, through the `note` output, in the pull-request comment.
        warn("evalua: %s: running without a baseline" % why)
        set_output("note", "No baseline: %s." % why)
        return 0

    if not token:
        return none("no token to look up the baseline artifact %s" % name)
    if not branch:
        return none("no base branch to take the baseline artifact %s from" % name)
    path = "/repos/%s/actions/artifacts?name=%s&per_page=100" % (repo, urllib.parse.quote(name))
    try:
        found, _ = api("GET", path, token)
    except ApiError as e:
        return none("cannot list artifacts (%s)" % e)
    refused = []
    for a in (found or {}).get("artifacts", []):
        wr = a.get("workflow_run") or {}
        rid = str(wr.get("id", ""))
        if a.get("expired") or wr.get("head_branch") != branch or not rid.isdigit() or rid == env("GITHUB_RUN_ID"):
            continue
        if len(refused) >= 20:
            break
        # The artifact's summary of its run says too little (no event): ask for the run itself.
        try:
            run, _ = api("GET", "/repos/%s/actions/runs/%s" % (repo, rid), token)
        except ApiError as e:
            refused.append("run %s: %s" % (rid, e))
            continue
        why = baseline_refusal(run or {}, repo, branch, workflow)
        if why:
            refused.append("run %s: %s" % (rid, why))
            continue
        log("evalua: baseline: artifact %s of run %s (%s, branch %s)" % (name, rid, run.get("event"), branch))
        set_output("run-id", rid)
        return 0
    source = "the workflow %s" % workflow if workflow else "a push"
    why = "no artifact %s from %s to %s on %s" % (name, source, repo, branch)
    if refused:
        why += " (refused: %s)" % "; ".join(refused[:5])
    return none(why)


def cmd_run():
    suite_list = suites()
    if not suite_list:
        log("evalua: no suites given (input `suites`)")
        set_output("exit-code", "2")
        return 0
    dirs = out_dirs(suite_list)
    base = env("EVALUA_BASELINE")
    extra = shlex.split(env("EVALUA_ARGS"))
    worst = 0
    for suite, out in zip(suite_list, dirs):
        if os.path.exists(out):
            log("evalua: %s already exists: pick another runs-dir" % out)
            worst = max(worst, 2)
            continue
        argv = [evalua_bin(), "run", suite, "--out", out] + extra
        b = baseline_for(base, out, len(suite_list) == 1)
        if b:
            argv += ["--baseline", b]
        elif base:
            log("evalua: no baseline run of %s under %s: running without one" % (suite, base))
        log("evalua: " + " ".join(shlex.quote(a) for a in argv))
        code = subprocess.call(argv)
        log("evalua: %s exited %d" % (suite, code))
        worst = max(worst, code)
    set_output("exit-code", str(worst))
    set_output("run-dirs", "\n".join(d for d in dirs if os.path.isfile(os.path.join(d, "manifest.json"))))
    return 0


def body_of(run_dirs, artifact):
    parts = []
    for d in run_dirs:
        argv = [evalua_bin(), "report", d, "--format", "github"]
        if artifact:
            argv += ["--artifact-url", artifact]
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        if p.returncode not in (0, 1) or not p.stdout.strip():
            last = (p.stderr.strip().splitlines() or ["?"])[-1]
            parts.append("**evalua:** no report for %s: %s\n" % (md_text(d), md_text(last)))
        else:
            parts.append(p.stdout)
        if p.stderr.strip():
            log(p.stderr.strip())
    body = "\n---\n\n".join(parts) if parts else "**evalua:** no run finished; see the job's log.\n"
    if len(body) > MAX_BODY:
        body = body[:MAX_BODY] + "\n\n… (cut: the whole report is in the step summary and the artifact)\n"
    return body


def cmd_comment():
    token = env("EVALUA_TOKEN")
    key = env("EVALUA_COMMENT_KEY", "evalua") or "evalua"
    marker = "%s%s -->" % (MARKER_PREFIX, key)
    run_dirs = [d for d in env("EVALUA_RUN_DIRS").splitlines() if d.strip()]
    artifact = env("EVALUA_ARTIFACT_URL")
    if not artifact and env("GITHUB_RUN_ID") and env("GITHUB_REPOSITORY"):
        artifact = "%s/%s/actions/runs/%s" % (
            env("GITHUB_SERVER_URL", "https://github.com").rstrip("/"),
            env("GITHUB_REPOSITORY"),
            env("GITHUB_RUN_ID"),
        )
    body = body_of(run_dirs, artifact)
    note = env("EVALUA_BASELINE_NOTE").strip()
    if note:
        body = "_evalua: %s_\n\n%s" % (md_text(note), body)
    append_summary(body)
    set_output("comment-url", "")

    ev = event()
    number = pull_number(ev)
    if env("EVALUA_COMMENT", "true").lower() in ("false", "0", "no", "off"):
        return 0
    if not number:
        log("evalua: not a pull request: the report is in the step summary only")
        return 0
    if not token:
        warn("evalua: no token (a pull request from a fork gets none): the report is in the step summary only")
        append_summary("\n_evalua: no token to comment with (a fork's pull request): this summary is the report._\n")
        return 0
    repo = env("GITHUB_REPOSITORY")
    full = "%s\n%s" % (marker, body)
    try:
        existing = find_comment(repo, number, marker, token)
        if existing:
            got, _ = api("PATCH", "/repos/%s/issues/comments/%s" % (repo, existing), token, {"body": full})
            log("evalua: updated comment %s" % existing)
        else:
            got, _ = api("POST", "/repos/%s/issues/%s/comments" % (repo, number), token, {"body": full})
            log("evalua: created a comment on #%s" % number)
        set_output("comment-url", (got or {}).get("html_url", ""))
    except ApiError as e:
        if e.status in (401, 403, 404):
            why = "the token may not comment (a pull request from a fork gets a read-only one)"
        else:
            why = "the API failed"
        warn("evalua: cannot comment on #%s (%s; %s): the report is in the step summary only" % (number, e, why))
        append_summary("\n_evalua: could not comment on the pull request (%s): this summary is the report._\n" % why)
    return 0


def find_comment(repo, number, marker, token):
    """The id of this action's comment on the pull request (the first that starts with the marker)."""
    url = "/repos/%s/issues/%s/comments?per_page=100" % (repo, number)
    while url:
        page, headers = api("GET", url, token)
        for c in page or []:
            if (c.get("body") or "").startswith(marker):
                return c.get("id")
        url = next_link(headers)
    return None


def action_version():
    """The evalua version this action installs: its `version` input, else the
    version of the source the action was checked out with (the Cargo.toml
    beside action.yml); "" when neither says. Only a plain version string."""
    v = env("EVALUA_VERSION").strip()
    if not v and env("ACTION_PATH"):
        try:
            with open(os.path.join(env("ACTION_PATH"), "Cargo.toml"), encoding="utf-8") as f:
                m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
            v = m.group(1) if m else ""
        except OSError:
            v = ""
    return v if re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z.+-]{0,63}", v) else ""


def cache_dir(version):
    """Where an installed evalua of `version` is kept between jobs (the
    action's actions/cache step restores and saves it, keyed by version)."""
    root = env("EVALUA_CACHE_ROOT") or os.path.join(os.path.expanduser("~"), ".cache", "evalua-action")
    return os.path.join(root, version)


def cmd_version():
    v = action_version()
    if not v:
        log("evalua: no version to install: give the input `version` (e.g. %s), `wheel` or `binary`"
            % "0.1.0")
        set_output("version", "")
        return 0
    set_output("version", v)
    set_output("cache-dir", cache_dir(v))
    log("evalua: version %s (cache %s)" % (v, cache_dir(v)))
    return 0


def evalua_version_of(binary):
    """`evalua --version`'s version, or None when `binary` is not evalua."""
    try:
        p = subprocess.run([binary, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True)
    except OSError:
        return None
    words = p.stdout.split()
    if p.returncode != 0 or len(words) < 2 or words[0] != "evalua":
        return None
    return words[1]


def pip_install(what, extra=()):
    """`pip install` into a fresh venv under $RUNNER_TEMP; the evalua it put there, or None."""
    venv = os.path.join(env("RUNNER_TEMP", ".") or ".", "evalua-venv")
    log("evalua: pip install %s into %s" % (what, venv))
    if subprocess.call([sys.executable, "-m", "venv", "--clear", venv]) != 0:
        log("evalua: could not make the venv %s" % venv)
        return None
    pip = [os.path.join(venv, "bin", "pip"), "install", "--disable-pip-version-check", "-q"] + list(extra) + [what]
    if subprocess.call(pip) != 0:
        log("evalua: pip install %s failed (see above)" % what)
        return None
    return os.path.join(venv, "bin", "evalua")


def install_versioned(version):
    """(binary, where from): the cached evalua of `version`, else its prebuilt
    wheel from the package index (never built there: --only-binary), else the
    action's own source built with cargo (minutes); what was installed is kept
    in the cache for the next job."""
    cache = cache_dir(version)
    cached = os.path.join(cache, "evalua")
    if evalua_version_of(cached) == version:
        return cached, "cache"
    binary, source = pip_install("evalua==%s" % version, ["--only-binary", ":all:"]), "wheel"
    if binary is None and env("ACTION_PATH") and os.path.isfile(os.path.join(env("ACTION_PATH"), "Cargo.toml")):
        warn("evalua %s: no prebuilt wheel found; building it from the action's source with cargo "
             "(minutes; the next job of this version takes it from the cache)" % version)
        binary, source = pip_install(env("ACTION_PATH")), "source"
    if binary is None:
        return None, ""
    try:
        os.makedirs(cache, exist_ok=True)
        shutil.copy2(binary, cached)
    except OSError as e:
        warn("evalua: could not keep %s in the cache %s: %s" % (binary, cache, e))
    return binary, source


def cmd_install():
    given = env("EVALUA_GIVEN_BIN")
    version = action_version()
    source = ""
    if given:
        binary = os.path.realpath(given)
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            log("evalua: input `binary`: %s is not an executable file" % given)
            return 2
        source, version = "binary", ""
    elif env("EVALUA_WHEEL"):
        binary, source, version = pip_install(env("EVALUA_WHEEL")), "wheel", ""
    elif version:
        binary, source = install_versioned(version)
    else:
        log("evalua: nothing to install: give the input `version`, `wheel` or `binary`")
        return 2
    if binary is None:
        log("evalua: evalua %s could not be installed" % version)
        return 2
    got = evalua_version_of(binary)
    if got is None:
        log("evalua: %s --version does not say evalua: not evalua" % binary)
        return 2
    if version and got != version:
        log("evalua: %s is evalua %s, not the %s asked for" % (binary, got, version))
        return 2
    log("evalua: evalua %s (%s, from %s)" % (got, binary, source))
    path = env("GITHUB_ENV")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write("EVALUA_BIN=%s\n" % binary)
    set_output("binary", binary)
    set_output("source", source)
    return 0


def cmd_conclude():
    code = env("EVALUA_EXIT_CODE", "2")
    try:
        n = int(code)
    except ValueError:
        n = 2
    if n == 0:
        log("evalua: every gate held")
    elif n == 1:
        log("evalua: a gate failed")
    else:
        log("evalua: evalua could not run the suites (exit %d); see the log above" % n)
    return n


def main(argv):
    cmds = {
        "version": cmd_version,
        "install": cmd_install,
        "find-baseline": cmd_find_baseline,
        "run": cmd_run,
        "comment": cmd_comment,
        "conclude": cmd_conclude,
    }
    if len(argv) != 2 or argv[1] not in cmds:
        log("usage: evalua_action.py {%s}" % "|".join(cmds))
        return 2
    return cmds[argv[1]]()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
