---@meta evalua.host

-- Definitions of `require("evalua.host")` for lua-language-server (LuaCATS).
--
-- INTERNAL: the primitives the stdlib is written on (src/lua/host.rs). Suites
-- should use `evalua`, `evalua.check` and `evalua.judge`; a grader may use
-- these (e.g. `host.regex_is_match`, `host.json_encode`), but they may change
-- between versions. Regexes use Rust `regex` syntax, not Lua patterns.

---@class evalua.host
local host = {}

--- SQL NULL / JSON null: a light userdata distinct from `nil` (also `evalua.null`).
---@type evalua.Null
host.null = nil

--- Return it as a check's first value for "could not be decided here" (e.g. no judge model): the check is skipped, not passed.
---@type lightuserdata
host.SKIP = nil

--- Return it as a check's first value for "a grader error, with evidence":
--- `return host.UNDECIDED, evidence, message` (a judge's invalid or undeterminable verdict keeps its votes).
---@type lightuserdata
host.UNDECIDED = nil

--- Which keys a fault rule of each kind takes besides `kind`, `on_call` and `probability`
--- (declared once, in Rust: `spec::FaultKind::keys`).
---@return table<string, string[]> keys
function host.fault_kinds() end

--- The keys a suite may write in a declaration, as the Rust spec types declare them (without the
--- keys the DSL writes itself): `"model"` (endpoint options), `"providers"`, `"budget"`, `"reference"`,
--- `"tests"` (`check.tests`), `"fault"`, `"tool"` (`suite:tool`, with `run`), `"workdir"` (the git form),
--- `"command"` (`evalua.agent.command`), `"user.llm"`, `"sandbox"`.
---@param what string
---@return string[] names
function host.fields(what) end

--- A default set once in Rust that the stdlib needs at run time: `"tests.timeout_s"`, `"reference.max_ratio"`.
---@param name string
---@return number value
function host.default(name) end

--- A judge check's spec, parsed once when the check is declared (the checks pass it to the functions below).
---@param spec table `{ type = "rubric" | "pairwise" | "cascade", name, ... }` (stdlib/evalua/judge.lua builds it)
---@return userdata parsed
function host.judge_spec(spec) end

--- Run a rubric judge on the trial `t` (stdlib/evalua/judge.lua builds `spec`).
--- Returns what a check returns: true/false and evidence, `host.SKIP` and why,
--- or `host.UNDECIDED`, evidence and a message (a grader error).
---@param spec userdata `host.judge_spec { type = "rubric", name, criteria, models, panel }`
---@param t evalua.Trial
---@return any verdict
---@return any evidence
---@return string? message
function host.judge_rubric(spec, t) end

--- Compare `a` with `b` (the task taken from `t`) in both orders; a tie when the orders disagree.
---@param spec userdata `host.judge_spec { type = "pairwise", name, question, models, pass }`
---@param a string
---@param b string
---@param t evalua.Trial
---@return any verdict
---@return any evidence
---@return string? message
function host.judge_pairwise(spec, a, b, t) end

--- Run a judge cascade on the trial `t`: `spec.first` on every item, `spec.then` on those `spec.escalate` selects.
---@param spec userdata `host.judge_spec { type = "cascade", name, first, then, escalate }` (`first` and `then`: rubric specs)
---@param t evalua.Trial
---@return any verdict
---@return any evidence
---@return string? message
function host.judge_cascade(spec, t) end

--- Whether a judge model is reachable by configuration (a base URL or its API key variable set), and why not.
---@param model table a `judge.model { ... }` table
---@return boolean reachable
---@return string? why_not
function host.judge_reachable(model) end

--- True while loading a suite (declarations are validated); false when a
--- worker evaluates an already validated suite again to get its functions back.
---@return boolean
function host.validating() end

--- Hand a case declaration to the host (`suite:case` does): while loading, the
--- normalised case, read into its spec at once; in a worker, the table as
--- written, kept aside for the trials that run it. Returns why the
--- declaration is wrong (a duplicate id), or nil.
---@param case table
---@return string? error
function host.declare(case) end

--- Hand a dataset file to the host (`suite:dataset` does). While loading, the
--- host streams its rows and calls `fn(row, i, where)` (the stdlib's row
--- function) for each, raising `file:line` errors for bad rows unless
--- `on_error` is `"skip"`; in a worker, `fn` is the suite's `map`, kept for
--- the trials. Returns why the file cannot be used, or nil.
---@param path string absolute path
---@param format? "jsonl"|"json"|"csv"
---@param on_error? "fail"|"skip"
---@param fn? function
---@return string? error
function host.dataset(path, format, on_error, fn) end

--- The globals table of the running unit of work (each trial gets its own, over a read-only shared base).
---@return table<string, any> globals
function host.env() end

--- A read-only view of a shared table (and of the tables inside it); writing to it raises.
---@generic T: table
---@param t T
---@return T view
function host.readonly(t) end

--- True while a limit (instructions, time) has stopped the running code: it is unwinding back to the host.
---@return boolean
function host.tripped() end

--- Keep aside where an error whose message names no place was raised (`error(msg, 0)`, an object
--- with its own `__tostring`): the host names that `file:line` should the error reach the command line.
---@param text string the message's text
---@param at string `file:line`
function host.raised_at(text, at) end

--- Mark `t` to encode as a JSON array, even when empty; returns `t`.
---@generic T: table
---@param t T
---@return T
function host.array(t) end

--- Resolve `rel` against the suite's folder, lexically (no symlink resolution).
---@param rel string
---@return string path
function host.abspath(rel) end

--- Whether path `p` exists (always true in a trial's state: paths are checked when the suite loads).
---@param p string
---@return boolean
function host.exists(p) end

--- `file:line` of the code running `level` frames up the Lua stack (default 1).
---@param level? integer
---@return string location
function host.caller(level) end

--- Wrap `f` in a host function that calls `f(where, ...)` with its caller's `file:line` and prefixes
--- any error `f` raises with it; being a host function, it keeps the line even in a tail call.
---@param f fun(where: string, ...): ...
---@return function
function host.located(f) end

--- A declaration's error: `msg` with its own `file:line`, else prefixed with `where`. While a suite is
--- checked the error is collected and loading goes on (every independent error is said at once);
--- elsewhere it is raised.
---@param where string the declaration's `file:line`
---@param msg any the error raised
function host.report(where, msg) end

--- The name among `names` nearest to `name` (a typo of it: a few letters changed, added, dropped or
--- swapped), or nil.
---@param name string
---@param names string[]
---@return string|nil
function host.nearest(name, names) end

--- `file:line` where function `f` is defined.
---@param f function
---@return string location
function host.where(f) end

--- Parse a date or datetime into Unix seconds; values without an offset are read in `zone` (default `"UTC"`).
---@param text string an ISO 8601 date or datetime
---@param zone? string `"UTC"`, `"+02:00"` or an IANA name
---@return number? seconds nil when it does not parse
---@return string? error why it does not parse
function host.instant(text, zone) end

--- Why `pattern` is not a valid regex, or nil when it is.
---@param pattern string
---@return string? error
function host.regex_error(pattern) end

--- Why `name` cannot be one of a suite's `exclude` (SPEC §22), or nil when it can.
---@param name string an outcome or an ending
---@return string? error
function host.exclusion_error(name) end

--- Whether `pattern` matches somewhere in `s` (raises on a bad regex).
---@param pattern string
---@param s string
---@return boolean
function host.regex_is_match(pattern, s) end

--- The first match of `pattern` in `s`, or nil.
---@param pattern string
---@param s string
---@return string? match
function host.regex_find(pattern, s) end

--- Every match of `pattern` in `s`: each match's first capture group, or the whole match when it has none.
---@param pattern string
---@param s string
---@return string[] matches
function host.regex_all(pattern, s) end

--- Encode a Lua value as JSON text (raises when it is not JSON-like).
---@param v any
---@return string json
function host.json_encode(v) end

--- Decode JSON text; returns nil and the error when it does not parse.
---@param s string
---@return any value
---@return string? error
function host.json_decode(s) end

--- Why `schema` is not a valid JSON Schema, or nil when it is (always nil in a trial's state).
---@param schema evalua.JsonSchema
---@return string? error
function host.schema_error(schema) end

--- Validate `value` against `schema`: whether it is valid, and every error as `path: message`.
---@param schema evalua.JsonSchema
---@param value any
---@return boolean valid
---@return string[] errors
function host.schema_validate(schema, value) end

--- Why a suite's `gate` table is not valid, or nil when it is (always nil in a trial's state).
---@param gate evalua.Gate
---@return string? error
function host.gate_error(gate) end

--- `os.time` on the frozen clock: no argument gives the clock; a date table (read in UTC) gives its Unix seconds.
---@param t? osdate|table
---@return integer seconds
function host.os_time(t) end

--- `os.date` on the frozen clock, in UTC (`"*t"` gives a table; a leading `!` is ignored).
---@param fmt? string a strftime format (default `"%c"`)
---@param t? integer Unix seconds (default: the frozen clock)
---@return string|osdate
function host.os_date(fmt, t) end

--- `os.clock`: seconds since the Lua state was created.
---@return number
function host.os_clock() end

--- `print`, kept off stdout: lines go to the trial's log (or stderr when loading a suite).
---@param ... any
function host.print(...) end

--- Why `pattern` is not a valid glob (`*` stays within a folder, `**` crosses folders), or nil.
---@param pattern string
---@return string? error
function host.glob_error(pattern) end

--- The 1-based index of the first of `patterns` that matches `path`, or nil.
---@param patterns string[] globs
---@param path string a `/`-separated relative path
---@return integer? index
function host.glob_match(patterns, path) end

--- Look for the values of the environment variables `names` and the regexes `patterns` in `items`.
--- Secret values never reach Lua: findings carry a redacted excerpt; notes say which names were not looked for.
---@param names string[] environment variable names
---@param patterns string[] regexes (Rust syntax)
---@param items { where: string, text: string }[] the texts to scan
---@return { where: string, secret: string[], excerpt: string }[] findings
---@return string[] notes
function host.find_secrets(names, patterns, items) end

--- The value of an environment variable named EVALUA_* (nil when unset or empty); other names raise.
---@param name string
---@return string|nil
function host.getenv(name) end

--- Whether a model of `provider` is reachable by configuration (a base URL or an API key in the environment).
---@param provider "openai"|"anthropic"
---@return boolean
function host.model_configured(provider) end

--- Whether the environment variable `name` is set and not empty (its value never enters Lua).
---@param name string
---@return boolean
function host.env_is_set(name) end

return host
