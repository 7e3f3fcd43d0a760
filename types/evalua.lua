---@meta evalua

-- Definitions of `require("evalua")` for lua-language-server (LuaCATS).
-- Declarations only: the real module is stdlib/evalua/init.lua, embedded in
-- the evalua binary. tests/lua_defs.rs checks that every public function of
-- the stdlib is declared here (same name, same form: `function evalua.x(`,
-- `function evalua.agent.x(`, `function evalua.user.x(`, `function Suite:x(`).

---------------------------------------------------------------------------
-- Plain values

--- SQL NULL / JSON null: a light userdata distinct from `nil`, so it can sit in a list.
---@alias evalua.Null lightuserdata

--- A value a SQL statement takes as a `?` parameter (`nil` and `evalua.null` bind NULL; booleans bind 0/1).
---@alias evalua.SqlParam string|number|boolean|evalua.Null|nil

--- A JSON Schema, written as a Lua table (`{ type = "object", properties = {...}, required = {...} }`).
---@alias evalua.JsonSchema table<string, any>

--- What a tool does to the world: decides what `check.no_writes` and policies see.
---@alias evalua.Effect
---| "read"     # reads only (the default)
---| "write"    # changes the sandbox state (the database, the work dir)
---| "external" # acts outside (an email, a message): recorded in the outbox

--- Which set a case belongs to.
---@alias evalua.Split
---| "dev"      # tune the agent on it (the default)
---| "held_out" # keep for the final figures

--- How a trial ended.
---@alias evalua.Ended
---| "final"          # the agent gave its final answer
---| "deadline"       # stopped at the deadline (or the CPU limit)
---| "budget"         # a budget (tool calls, turns, tokens, cost) was spent
---| "crashed"        # the agent raised or exited abnormally
---| "protocol_error" # the agent broke the protocol
---| "infra_error"    # its model endpoint (or simulated user) failed after the agent had acted; graded
---| "not_started"    # an infrastructure error kept the agent from running

--- What became of a tool request.
---@alias evalua.CallStatus
---| "executed" # the handler ran and returned
---| "failed"   # the handler raised an error
---| "rejected" # an unknown tool, or arguments that fail its params schema
---| "denied"   # refused by policy (`requires`, `ctx.deny`) or by the budget
---| "faulted"  # an injected fault

--- The status an agent sees for its request (`env.call`'s second result).
---@alias evalua.ReplyStatus
---| "ok"     # executed, or faulted by a kind that reshapes the result (empty, partial, stale, inject)
---| "error"  # failed, rejected, or faulted by a kind that fails the call (error, rate_limit, timeout)
---| "denied" # denied

--- What a check returns first: a verdict, or `host.SKIP` ("could not be decided here").
---@alias evalua.Verdict boolean|lightuserdata

--- A check as a bare function: `function(t) return passed, evidence end`.
---@alias evalua.CheckFn fun(t: evalua.Trial): evalua.Verdict, any

--- A scripted agent: plays the agent for one trial and returns its final answer.
---@alias evalua.AgentFn fun(task: evalua.Task, env: evalua.Env): any

---------------------------------------------------------------------------
-- The module

---@class evalua
local evalua = {}

--- SQL NULL / JSON null, distinct from `nil` (e.g. in `t.db:rows(...)` and JSON values).
---@type evalua.Null
evalua.null = nil

--- A check returns this first to say "not applicable here": the result is skipped, never passed.
---@type lightuserdata
evalua.SKIP = nil

--- JSON for graders and trace adapters.
evalua.json = {}

--- Encode a Lua value as JSON text (`{}` is an object; use `evalua.array()` for an empty array).
---@param v any
---@return string
function evalua.json.encode(v) end

--- Decode JSON text: the value, or nil and the error.
---@param s string
---@return any value
---@return string? err
function evalua.json.decode(s) end

--- Regular expressions (Rust `regex` syntax, compiled once per pattern).
evalua.regex = {}

--- Whether `pattern` matches somewhere in `s`.
---@param pattern string
---@param s string
---@return boolean
function evalua.regex.is_match(pattern, s) end

--- The first match of `pattern` in `s`, or nil.
---@param pattern string
---@param s string
---@return string?
function evalua.regex.find(pattern, s) end

--- Every match of `pattern` in `s` (or, when the pattern has a capture group, every first group).
---@param pattern string
---@param s string
---@return string[]
function evalua.regex.all(pattern, s) end

--- Make `t` (or a new table) encode as a JSON array, even when empty (a plain `{}` encodes as an object).
---@generic T: table
---@param t? T the list to mark (default: a new empty one)
---@return T
function evalua.array(t) end

--- Absolute path of `rel`, resolved against the suite file's folder (for command lines and prompts).
---@param rel string a path relative to the suite file
---@return string path the absolute path
function evalua.path(rel) end

--- Declare a grader's examples for `evalua test` (in a `*_test.lua` file, where `evalua` is a global):
--- synthetic finished trials that `check` must accept (`expect = "pass"`) or reject (`"fail"`),
--- or skip (`"skip"`) or raise on (`"error"`). A test file returns this, or a list of them.
---@param check evalua.Check|evalua.CheckFn|evalua.Check[] the grader (a check group counts as one)
---@param examples evalua.GraderExample[]
---@return evalua.GraderTests
function evalua.grader_tests(check, examples) end

--- What `evalua.grader_tests` returns: the test file's value for `evalua test`.
---@class evalua.GraderTests
---@field name string the grader's name
---@field where string `file:line` of the declaration

--- One synthetic trial of a grader test. Paths (`db.schema`, `db.fixture`, `workdir`) resolve beside
--- the test file, then from the working directory.
---@class evalua.GraderExample
---@field name string shown as `test <grader> :: <name>`
---@field expect "pass"|"fail"|"skip"|"error" the verdict the grader must give
---@field calls? evalua.GraderCall[] `t.calls`
---@field answer? string `t.answer` (default "")
---@field messages? evalua.Message[] `t.messages` (default: the answer as the agent's one turn)
---@field outbox? evalua.OutboxItem[] `t.outbox`
---@field db? { schema?: string, fixture?: string, sql?: string } SQL files for `t.initial`; `sql` runs on a copy of it for `t.db`
---@field workdir? string a folder: the initial work tree
---@field initial_files? table<string, string> files added to the initial work tree
---@field files? table<string, string|false> the agent's changes to it (`false` deletes): `t.files`, `t.diff`
---@field ended? evalua.Ended default `"final"`
---@field error? string `t.error`
---@field usage? evalua.Usage default: no tokens, one turn, `tool_calls = #calls`
---@field case? table `t.case` (default `{ id = name }`)
---@field trial? integer `t.trial` (default 1)

--- A tool call of a synthetic trial: only `name` is required.
---@class evalua.GraderCall
---@field name string
---@field args? table default `{}`
---@field status? evalua.CallStatus default `"executed"`
---@field effect? evalua.Effect default nil (as for an unknown tool)
---@field id? string default `c1`, `c2`, …
---@field result? any
---@field error? string
---@field started_ms? number
---@field ended_ms? number

--- Declare a suite: the returned object takes `suite:tool{}` and `suite:case{}`; a suite file returns it.
---@param spec evalua.SuiteSpec
---@return evalua.Suite
function evalua.suite(spec) end

--- Agent constructors, for a suite's or a case's `agent`.
evalua.agent = {}

--- A Lua function that plays the agent, or a file (relative to the suite) returning one; deterministic given the trial's seed.
---@param fn evalua.AgentFn the agent function
---@return evalua.Agent
---@overload fun(path: string): evalua.Agent
function evalua.agent.scripted(fn) end

---@class evalua.CommandAgentSpec
---@field cmd string[] the program and its arguments (use evalua.path() for files beside the suite)
---@field env? string[] names of environment variables passed through (besides PATH, HOME, LANG)
---@field cwd? "workdir" where it runs: the trial's fresh work dir (the default and only choice)
---@field setup? string[] a command run in the work dir before the agent; failure is an infra error
---@field tools? "protocol"|"mcp" how tools are offered: tool_call lines (default), or an MCP server (streamable HTTP on 127.0.0.1) whose URL is in EVALUA_MCP_URL
---@field io? "jsonl"|"plain" how input and the final answer travel: start … final lines (default), or the input as the last argument and stdout (exit 0) as the answer
---@field model_proxy? boolean|evalua.ModelOptions serve OPENAI_BASE_URL / ANTHROPIC_BASE_URL to the agent on 127.0.0.1 and forward to this endpoint (true: the official ones), recording usage

--- Any program speaking JSON Lines on stdin/stdout (SPEC §4), or with `tools = "mcp"` / `io = "plain"` an MCP client: one process per trial, scrubbed environment, own process group.
---@param spec evalua.CommandAgentSpec
---@return evalua.Agent
function evalua.agent.command(spec) end

--- Replay a recorded trace (a trace file, or a run dir whose trace of the same case and trial is used) through today's executor.
---@param path string
---@return evalua.Agent
function evalua.agent.replay(path) end

--- Options naming a model endpoint (model agents, simulated users, the model proxy, judges).
---@class evalua.ModelOptions
---@field provider? "openai"|"anthropic" the API (default "openai": any OpenAI-compatible server)
---@field model? string the model name (default: the environment variable EVALUA_OPENAI_MODEL / EVALUA_ANTHROPIC_MODEL)
---@field base_url? string OpenAI-compatible: up to /v1; Anthropic: the host (default: EVALUA_<P>_BASE_URL, then <P>_BASE_URL, then the official URL)
---@field api_key_env? string the environment variable holding the key (default <P>_API_KEY; optional for a non-official base_url)
---@field prices? { input: number, output: number } USD per million input / output tokens (overrides the built-in table)
---@field temperature? number passed through
---@field seed? integer passed through (OpenAI-compatible only; default: the trial's seed)
---@field max_tokens? integer output tokens per model call
---@field timeout_s? number per request (default 120)
---@field max_retries? integer retries on 429/529/5xx/connection failures (default 4)
---@field max_concurrency? integer requests in flight to one base URL, process-wide (default 8)

---@class evalua.Model: evalua.ModelOptions
---@field kind "model"

--- A model endpoint: a model name or options; for `evalua.user.llm { model = ... }`, `model_proxy` and judges.
---@param spec string|evalua.ModelOptions
---@return evalua.Model
function evalua.model(spec) end

--- Whether a model of `provider` ("openai" by default) is reachable by configuration (a base URL or API key in the environment).
---@param provider? "openai"|"anthropic"
---@return boolean
function evalua.model_configured(provider) end

--- Whether the variable `url_env` ("EVALUA_PG_URL" by default) holds a PostgreSQL URL, for a suite
--- with `sandbox = { db = "postgres" }` to skip itself without a server.
---@param url_env? string
---@return boolean
function evalua.postgres_configured(url_env) end

--- The value of an environment variable named EVALUA_* (nil when unset); other names (API keys among them) raise.
---@param name string
---@return string|nil
function evalua.getenv(name) end

---@class evalua.ModelAgentSpec: evalua.ModelOptions
---@field system? string the system prompt, or the path (relative to the suite) of a file holding it; its sha256 goes into the manifest
---@field max_turns? integer model calls (steps of the tool loop) per trial (default 20)
---@field tool_results? "json"|"text" how a result reaches the model: {status, content, error} as JSON (default), or the tool's own text ("Error: <message>" when it failed)
---@field calls_per_step? integer only the first N tool calls of a response run; the rest are dropped (default: all)

--- A model-driven tool loop in the host over the OpenAI-compatible Chat Completions API (OpenAI, vLLM, llama.cpp, Ollama).
---@param spec evalua.ModelAgentSpec
---@return evalua.Agent
function evalua.agent.openai(spec) end

--- A model-driven tool loop in the host over the Anthropic Messages API.
---@param spec evalua.ModelAgentSpec
---@return evalua.Agent
function evalua.agent.anthropic(spec) end

--- Simulated-user constructors, for a case's `user` (multi-turn cases).
evalua.user = {}

---@class evalua.LlmUserSpec
---@field profile? string who the user is; hidden from the agent (required unless `system` is given)
---@field goal? string what the user wants from the conversation (required unless `system` is given)
---@field system? string the user's whole system prompt, instead of evalua's
---@field opening? string the user speaks first, answering this line (never shown to the agent); its answer is the agent's first message
---@field model? string|evalua.ModelOptions the model playing the user
---@field max_turns? integer replies the user gives at most (default 10)
---@field withhold? evalua.Withhold[] what the user must not say before the agent asks for it: a turn that does is a leak (SPEC §18)
---@field adherence? evalua.Check a `judge.rubric { … }` whose criteria say how the user must behave: it reads the conversation, the profile and the goal after each trial; failing it makes the user not adherent (SPEC §18)

--- Something a user must withhold until asked (SPEC §18).
---@class evalua.Withhold
---@field text string what the user must not say (a case-insensitive substring)
---@field until_asked string a regex (case-insensitive): once an agent message matches it, the user may say `text`

--- A simulated user played by a model; it answers each agent message until it says ###STOP###.
---@param spec evalua.LlmUserSpec
---@return evalua.User
function evalua.user.llm(spec) end

--- Fixed user turns: the agent's n-th `env.say` (or message) gets the n-th string as the reply.
--- `withhold = { … }` beside the turns: what the user must not say unasked (SPEC §18).
---@param turns string[]|{ withhold?: evalua.Withhold[] } the user's replies, in order
---@return evalua.User
function evalua.user.script(turns) end

---------------------------------------------------------------------------
-- Declaring a suite

--- An adaptive run's trials a case (SPEC §20): every case its `min` first, then
--- rounds where the outcome is most uncertain, none past its `max`.
---@class evalua.TrialRange
---@field min integer the least trials (at least 1)
---@field max integer the most trials (at least `min`)

--- The table given to `evalua.suite { ... }`. Unknown keys are an error at the suite's line.
---@class evalua.SuiteSpec
---@field name string the suite's name: letters, digits, `_`, `-`, `.` (required)
---@field version? string dataset revision, pinned in the run's manifest
---@field description? string a sentence on what the suite measures
---@field trials? integer|evalua.TrialRange trials per case (default 1; a case's `trials` or `--trials` overrides); a range `{ min = 2, max = 20 }` makes the run adaptive (SPEC §20)
---@field undecided? "fail"|"pass" what a gate an adaptive run leaves undecided at every case's max does to the run (default "fail")
---@field budget? evalua.Budget limits per trial
---@field sandbox? evalua.Sandbox the per-trial state: database schema and frozen clock
---@field agent? evalua.Agent|string the agent under test (from `evalua.agent.*`; a case may override it), or with `agents` the default agent's name
---@field agents? table<string, evalua.Agent> named agents (SPEC §14): `evalua run --agent NAME` picks one; the manifest records `agent.name`
---@field default_agent? string with `agents`: the default agent's name (needed when there are several)
---@field gate? evalua.Gate thresholds checked after the run; a failed gate makes the exit code 1
---@field grade? { gate?: evalua.Gate, reexecute?: boolean } what `evalua grade` uses: its own gates instead of `gate` (a trace is one trial, so pass^2 and up have no value there); `reexecute = true` runs recorded tool calls again on a fresh sandbox
---@field seed? integer accepted but not read yet: the run's seed comes from `evalua run --seed`
---@field skip? string|false when a string, `evalua run` skips the suite saying why (exit 0), e.g. no model configured
---@field monitors? table<string, evalua.Check|evalua.CheckFn> checks that name a failure mode, run on every trial of `run` and every item of `grade`; a failure labels the trial (`failure_modes`)
---@field trace_adapter? fun(span: evalua.Span): evalua.Adapted? `evalua grade`: reads a team's own span attributes (called for every span)
---@field match? fun(item: evalua.Trial): string? `evalua grade`: the id of the case an item belongs to (its `expect` then applies), or nil
---@field held_out_max_runs? integer held-out runs of the same cases and version before `run` warns (default 5; SPEC §13)
---@field faults? table<string, evalua.Fault|evalua.Fault[]> faults injected on purpose, by tool name, in every case
---@field perturb? table<string, evalua.PerturbationSpec> perturbations of every case, by name (`evalua run --perturb`)
---@field abstention? boolean model agents are offered a built-in `abstain { reason }` tool (SPEC §22)
---@field contamination? { sources: string[] } regexes of published solutions: a trial whose sources, tool arguments or results match one is `contaminated`, its success left out of the capability figures (SPEC §22)
---@field exclude? string[] outcomes or endings left out of the capability figures, declared before the run and stated with their counts in every report (SPEC §22)

--- A fault injected on purpose into a tool's calls. The call is recorded as `faulted` with the fault.
--- `error`, `rate_limit` and `timeout`: the handler does not run and the agent gets an error
--- (`timeout` with `effect = "applied"`: the handler runs, its effect happens, and the agent still gets the timeout);
--- `empty`, `partial` and `stale`: the handler runs and the agent gets a reshaped result, as a success;
--- `inject`: the handler runs and the agent gets its result with attacker text planted in it, as a success.
---@class evalua.Fault
---@field kind "error"|"rate_limit"|"timeout"|"empty"|"partial"|"stale"|"inject" what the fault does (required)
---@field on_call? integer|integer[] fire on these calls of the tool (1-based, counting the calls that pass validation and policy)
---@field probability? number fire on each call with this probability, drawn from the trial's seed (not with `on_call`); with neither, every call
---@field retry_after_s? number `rate_limit`: the wait the agent is told to respect (default 1)
---@field message? string `error`, `rate_limit`, `timeout`: the error text the agent gets
---@field keep? number `partial`: the share of lists (or of fields, or of a string's characters) kept, 0..1 (default 0.5)
---@field age_s? number `stale`: how far dates and datetimes in the result move into the past, in seconds (default 86400)
---@field effect? "applied"|"none" `timeout`: "applied" runs the handler (the effect happens) before the agent is told the call timed out (default "none")
---@field text? string `inject` (required): the attacker's text planted in the result
---@field field? string `inject`: where, as keys and 1-based indexes joined by dots (`"entries.2.message"`); appended to the string there. Default: after a string result, as `injected` in an object, as a last item of a list

--- A span of a recorded trace (`trace_adapter`'s argument, `t.spans`' items).
---@class evalua.Span
---@field trace_id string lowercase hex
---@field span_id string lowercase hex
---@field parent_span_id? string nil for a root span
---@field name string
---@field kind? string `internal`, `server`, `client`, `producer`, `consumer`
---@field start_time string RFC 3339
---@field end_time string RFC 3339
---@field start_ns integer Unix nanoseconds
---@field end_ns integer Unix nanoseconds
---@field duration_ms number
---@field status "unset"|"ok"|"error"
---@field status_message string
---@field attributes table<string, any> a flat table, as the span has them
---@field events { name: string, time: string, time_ns: integer, attributes: table<string, any> }[]

--- What a `trace_adapter` returns for a span: nil (read it by the conventions), `{ skip = true }`,
--- `{ call = { name, args, result, status, error } }`, `{ input = ..., answer = ... }`, `{ usage = { input_tokens, output_tokens, cost_usd } }`.
---@class evalua.Adapted
---@field skip? boolean ignore the span
---@field call? { name: string, args?: table, result?: any, status?: "executed"|"failed"|"denied"|"rejected"|"faulted", error?: string }
---@field input? string the first user message
---@field answer? string the final answer
---@field usage? { input_tokens?: number, output_tokens?: number, cost_usd?: number }

--- A goldens module, as `evalua promote` writes it.
---@class evalua.Goldens
---@field version integer bumped by each promote that changes the file
---@field cases { id: string, input: string, failure_modes: string[], tool_sequence?: string[], source_traces?: string[] }[]

--- What `suite:goldens` takes besides the goldens: the options of the cases it declares.
---@class evalua.GoldensOptions
---@field fixture? string SQL file loaded after the suite's schema
---@field expect? (evalua.Check|evalua.CheckFn)[] checks every golden case gets, besides "does not re-fire <mode>"
---@field prohibited? (string|evalua.Check)[] critical checks, as in `suite:case`
---@field trials? integer|evalua.TrialRange
---@field tags? string[] added to `"golden"`
---@field tools? string[]
---@field agent? evalua.Agent
---@field user? evalua.User
---@field clock? string
---@field split? evalua.Split
---@field weight? number
---@field difficulty? string
---@field workdir? string|evalua.GitWorkdir
---@field reference? evalua.ReferenceSpec
---@field harden? evalua.HardenSkip adversaries of `evalua harden` every golden leaves out, and why

--- Limits per trial; each is a non-negative number. Past one, the trial ends with `ended = "budget"` (or `"deadline"`).
---@class evalua.Budget
---@field deadline_s? number wall-clock seconds for the agent
---@field max_tool_calls? number tool calls the agent may request
---@field max_turns? number agent turns (messages to the user and the final answer)
---@field max_tokens? number input + output tokens, as the agent reports them
---@field max_cost_usd? number cost in US dollars, as the agent reports it

--- The per-trial sandbox.
---@class evalua.Sandbox
---@field db? "sqlite"|"postgres" the database engine: the embedded SQLite (default), or a PostgreSQL server (a database per trial)
---@field url_env? string with `db = "postgres"`: the environment variable holding the server's URL (default `"EVALUA_PG_URL"`)
---@field schema? string SQL file (relative to the suite) run before each case's fixture
---@field clock? string the frozen clock, an ISO 8601 datetime (e.g. `"2026-11-03T10:00:00Z"`); `os.time()`/`os.date()` read it
---@field workdir? string|evalua.GitWorkdir the initial work tree, copied for each trial: a folder (relative to the suite) or a git bundle
---@field max_fixture_mb? number the largest schema or fixture file accepted, in MiB (default 64; `EVALUA_MAX_FIXTURE_MB` overrides)
---@field max_file_mb? number a trial's changed work-dir file larger than this (MiB, default 64) is not read, diffed line by line or kept: recorded by path and size as skipped
---@field max_trial_mb? number past this many MiB of a trial's kept work-dir files (default 256), further changed files are skipped likewise
---@field expose? string[] paths (files or folders, relative to the suite) every process of the suite may read inside its sandbox
---@field network? boolean `true` (default): processes share the host's network; `false`: only a loopback (not with `tools = "mcp"` or `model_proxy`)

--- A work tree from a git bundle: cloned once per run (with the `git` CLI), checked out at `rev`, `.git` dropped.
---@class evalua.GitWorkdir
---@field git string the bundle file, relative to the suite
---@field rev? string the commit, tag or branch to check out (default: the bundle's HEAD)

--- Gates: `name = threshold` or `name = { min|max = n, on = "point"|"lower"|"upper" }`. Names: `pass^K`, `pass@K`, `accepted`
--- (minimum rates in [0, 1]); `critical_failures`, `grader_errors`, `infra_errors`, `skipped_checks`, `cost_per_accepted_usd`, `p50_ms`, `p95_ms` (maximums).
--- `hardened = true` among them: `evalua run` first plays `evalua harden`'s adversaries and fails when a case accepts one (SPEC §19).
---@alias evalua.Gate table<string, number|evalua.GateBound|boolean>

--- A gate with an explicit bound: `on = "lower"` checks the 95% interval's lower bound instead of the point.
---@class evalua.GateBound
---@field min? number the minimum (for rates and pass figures)
---@field max? number the maximum (for counts, cost and latency)
---@field on? "point"|"lower"|"upper" which value is compared (default `"point"`)

--- An agent, as made by `evalua.agent.*`.
---@class evalua.Agent
---@field kind "scripted"|"command"|"replay"|"openai"|"anthropic" the kind of agent
---@field path? string absolute path of a scripted agent's file
---@field fn? evalua.AgentFn a scripted agent's function

--- A simulated user, as made by `evalua.user.*`.
---@class evalua.User
---@field kind "script"|"llm" the kind of user
---@field turns string[] the user's replies, in order

--- A declared suite: add tools and cases to it, then `return` it from the suite file.
---@class evalua.Suite
---@field name string the suite's name
---@field version? string dataset revision
---@field description? string what the suite measures
---@field trials integer trials per case (default 1; with a range, its max)
---@field budget evalua.Budget limits per trial (`{}` when none)
---@field sandbox evalua.Sandbox the per-trial sandbox (`schema` made absolute)
---@field agent? evalua.Agent the default agent
---@field gate evalua.Gate the gates (`{}` when none)
local Suite = {}

--- Declare a tool the agent may request; returns the declared tool.
---@param spec evalua.ToolSpec
---@return evalua.Tool
function Suite:tool(spec) end

--- Declare a case: an input, its fixture and the checks its trials must pass; returns the declared case
--- while the suite loads (nil when a trial's worker evaluates the file again).
---@param spec evalua.CaseSpec
---@return evalua.Case?
function Suite:case(spec) end

--- Declare an adversary of `evalua harden` (SPEC §19): an agent that tries to pass every case without doing
--- its task, played beside the built-in ones (`claim`, `bystander`, `everything`, `wrong_args`, `forge`,
--- `tamper`, `peek`, `judge_inject`); a case whose checks accept it has a hole.
---@param spec { name: string, agent: evalua.Agent }
function Suite:adversary(spec) end

--- Declare one case per row of a dataset file (SPEC §3): a JSON Lines file, a JSON array of rows, or a
--- CSV file (header row = keys, every value a string). The rows are streamed by the host; each goes
--- through `map(row, i)`, whose result is a case table as `suite:case` takes (without `map` the row is
--- the case table). The path is relative to the suite file; the format comes from the extension
--- (`.jsonl`/`.ndjson`, `.json`, `.csv`) unless given. A bad row (it does not parse, `map` raises, or
--- the case is invalid) stops the load with `file:line` and the column, unless `on_error = "skip"`,
--- which leaves it out and counts it (manifest.json, summary.json). The file's sha256 and row count go
--- to the manifest. `map` must be a function of `(row, i)` alone: a trial reads its row again and maps it.
---@param path string the data file, relative to the suite file
---@param opts? evalua.DatasetOptions
function Suite:dataset(path, opts) end

--- Options of `suite:dataset`.
---@class evalua.DatasetOptions
---@field map? fun(row: table, i: integer): evalua.CaseSpec turn a row (a decoded JSON value, or a CSV row keyed by the header) into a case table
---@field format? "jsonl"|"json"|"csv" the file's format (default: from its extension)
---@field on_error? "fail"|"skip" a bad row stops the load (`"fail"`, the default) or is left out and counted (`"skip"`)

--- Declare a list of cases, such as the module `evalua synth` writes (SPEC §23): each a case table, with a drafted
--- case's `expect_sql`, `family` and `rationale`. A case whose `review.status` is `"rejected"` is skipped; one that is
--- `"pending"` is played, reported apart (`pending_review`) and counted in no figure or gate.
---@param cases evalua.DraftedCase[] e.g. `require("synthetic.refunds")`
function Suite:cases(cases) end

--- Declare golden cases from a goldens module (`evalua promote` writes it): each must not re-fire its failure modes.
---@param goldens evalua.Goldens e.g. `require("goldens.refunds")`
---@param opts? evalua.GoldensOptions
---@return evalua.Case[]
function Suite:goldens(goldens, opts) end

--- The table given to `suite:tool { ... }`.
---@class evalua.ToolSpec
---@field name string the tool's name: starts with a letter or `_`, then letters, digits, `_`, `-`, `.` (required, unique)
---@field description? string what the tool does, as the agent reads it
---@field params? evalua.JsonSchema JSON Schema of the arguments (default `{ type = "object" }`); a call that does not validate is `rejected`
---@field effect? evalua.Effect `"read"` (default), `"write"` or `"external"`
---@field validate? boolean default true; false: `params` is only shown to the agent, the handler judges the arguments
---@field ends? boolean default false; true: a model agent's call to it ends the conversation (no further step)
---@field forbidden_in_attack? boolean an attack case must not call it: requests count as attempts, denials as blocked (SPEC §13)
---@field requires? string[] tools that must have executed earlier in the trial; otherwise the call is `denied`
---@field intervention? boolean an executed call is an intervention (a transfer to a human, an escalation): counted per trial (SPEC §22)
---@field source? string the parameter holding what a call reads (a URL, a document id): each executed call's value joins the trial's `sources` (SPEC §22)
---@field run fun(ctx: evalua.Ctx, args: table): any the handler: its return value (JSON-like) is the result the agent gets; raising makes the call `failed`

--- A declared tool, as returned by `suite:tool`.
---@class evalua.Tool
---@field name string the tool's name
---@field description string its description (`""` when none)
---@field params evalua.JsonSchema the arguments' JSON Schema
---@field effect evalua.Effect its effect
---@field requires string[] tools that must have executed first
---@field run fun(ctx: evalua.Ctx, args: table): any the handler

--- What a case's `expect` list holds: a check function, a check table, or a group of checks (as `check.answer { set = ... }` returns).
---@alias evalua.Expectation evalua.Check|evalua.CheckFn|evalua.Check[]

--- The table given to `suite:case { ... }`. Unknown keys are an error at the suite's line.
---@class evalua.CaseSpec
---@field id string the case's id: letters, digits, `_`, `-`, `.` (required, unique in the suite)
---@field split? evalua.Split `"dev"` (default) or `"held_out"`
---@field tags? string[] labels to select and group cases (`--tag`)
---@field difficulty? string free label, e.g. `"easy"`
---@field input string the task given to the agent (required)
---@field fixture? string SQL file (relative to the suite) loaded after the sandbox schema
---@field expect? evalua.Expectation[] the checks every trial must pass
---@field prohibited? (string|evalua.Check|evalua.CheckFn)[] SQL queries that must return no rows, 0 or NULL, or checks; any failure is critical
---@field trials? integer|evalua.TrialRange trials of this case (overrides the suite's); a range: its least and most trials in an adaptive run
---@field weight? number the case's weight in the figures (default 1)
---@field tools? string[] the subset of the suite's tools offered in this case (default: all)
---@field agent? evalua.Agent overrides the suite's agent for this case
---@field user? evalua.User the simulated user, for multi-turn cases
---@field metadata? table free data, kept with the case
---@field clock? string this case's frozen clock (ISO 8601), overriding the sandbox's
---@field workdir? string|evalua.GitWorkdir this case's initial work tree, overriding `sandbox.workdir`
---@field faults? table<string, evalua.Fault|evalua.Fault[]|false> this case's faults by tool: they replace the suite's for that tool (`false`: none)
---@field perturb? table<string, evalua.PerturbationSpec> this case's own perturbations, by name: each replaces the suite's of the same name
---@field reference? evalua.ReferenceSpec what a reference solution takes: trials' tool calls and tokens are reported as ratios to it
---@field accept_abnormal_end? string why a trial whose agent crashed or broke the protocol may still be accepted (by default it never is)
---@field should_abstain? boolean the case's contract requires abstaining: its default `expect` is `{ check.abstained() }`; elsewhere an abstention is an unsolved task (SPEC §22)
---@field harden? evalua.HardenSkip adversaries of `evalua harden` whose behaviour is this case's right answer, and why (SPEC §19)
---@field source? evalua.CaseOrigin where a drafted case came from (`evalua synth`, SPEC §23)
---@field review? evalua.CaseReview a person's review of a drafted case: `pending` is played and counted nowhere, `rejected` is never declared

--- A case's `harden = { skip = { … }, reason = "…" }` (SPEC §19).
---@class evalua.HardenSkip
---@field skip string[] the adversaries left out: `claim`, `bystander`, `everything`, `wrong_args`, `forge`, `tamper`, `peek`, `judge_inject`, or the suite's own
---@field reason string why their behaviour is right here (shown in harden's report)

--- Where a drafted case came from (`evalua synth` writes it).
---@class evalua.CaseOrigin
---@field kind string `"synthetic"`: drafted by a model
---@field model? string the model that drafted it
---@field prompt_sha256? string sha256 of the drafting request
---@field at? string when it was drafted (RFC 3339)

--- A person's review of a drafted case (`evalua review`, `evalua view --review synthetic`).
---@class evalua.CaseReview
---@field status "pending"|"approved"|"rejected" pending: played, reported apart, in no figure or gate; approved: counts; rejected: skipped
---@field reviewer? string who decided
---@field at? string when (RFC 3339)
---@field note? string why

--- A drafted case as `evalua synth` writes it to its module: a case table, plus `expect_sql`
--- (each a `check.sql(query, { equals = … })`), `family` (a tag, with `"synthetic"`) and `rationale` (in `metadata`).
---@class evalua.DraftedCase: evalua.CaseSpec
---@field family? string the failure family it covers (`happy`, `wrong_permissions`, …)
---@field expect_sql? { query: string, equals?: any, tolerance?: number }[] the expected state: each query's first value equals `equals` (absent: no row, 0 or NULL)
---@field rationale? string why the model drafted it

--- A case's reference solution, as declared: at least one of `calls` and `tokens`.
---@class evalua.ReferenceSpec
---@field calls? integer|(string|{ name: string, args?: table })[] the reference's tool calls: a number, or the list of its calls (tool names or `{ name, args }`)
---@field tokens? integer input + output tokens the reference takes
---@field max_ratio? number an accepted trial above this many times the reference (calls or tokens) is listed in the reports, and `check.efficiency`'s default limit (default 2)

--- A case's reference solution, as `t.case.reference` holds it.
---@class evalua.Reference
---@field calls? integer the reference's tool calls (counted from the list when a list was given)
---@field tokens? integer its tokens
---@field max_ratio number the ratio above which a trial takes too much (default 2)
---@field call_list? { name: string, args?: table }[] the reference's calls, when they were listed

--- A declared case, as returned by `suite:case` and seen as `ctx.case` / `t.case`.
---@class evalua.Case
---@field id string the case's id
---@field split evalua.Split `"dev"` or `"held_out"`
---@field tags string[] its tags (`{}` when none)
---@field difficulty? string its difficulty label
---@field input string the task given to the agent
---@field fixture? string absolute path of its fixture
---@field trials? integer its own number of trials, if set (with a range, its max)
---@field _trials_min? integer with `trials = { min, max }`: its min (its `trials` is the max)
---@field weight number its weight (default 1)
---@field tools? string[] the tools offered, if restricted
---@field agent? evalua.Agent its own agent, if set
---@field user? evalua.User its simulated user, if any
---@field metadata? table its free data
---@field clock? string its own frozen clock, if set
---@field workdir? { dir?: string, git?: string, rev?: string } its own initial work tree, if set: a folder (`dir`) or a git bundle (`git`, `rev`), absolute
---@field checks evalua.Check[] its checks, normalized (`expect` then `prohibited`), with unique names
---@field faults? table<string, evalua.Fault[]|false> its own faults by tool, each rule with its kind's defaults, if set
---@field reference? evalua.Reference its reference solution, if declared
---@field accept_abnormal_end? string why a crash or protocol error may pass in this case, if set
---@field perturb? table<string, evalua.Perturbation> its own perturbations, normalized, if set
---@field should_abstain? boolean true when the case's contract requires abstaining
---@field harden? evalua.HardenSkip the adversaries `evalua harden` leaves out here, and why
---@field source? evalua.CaseOrigin where it came from, when drafted
---@field review? evalua.CaseReview its review, when drafted

--- A perturbation as a suite or a case declares it (SPEC §17): what it changes.
---@class evalua.PerturbationSpec
---@field input? string the case's input, replaced
---@field fixture? string the case's fixture, replaced (relative to the suite's folder)
---@field faults? table<string, evalua.Fault|evalua.Fault[]|false> fault rules, replacing the case's tool by tool
---@field drop_tools? string[] tools not offered at all: a request for one is `rejected` as unknown
---@field user? evalua.User the user, replaced
---@field expect? evalua.Check[] checks that replace the case's

--- A perturbation as normalized (`t.case.perturb`).
---@class evalua.Perturbation
---@field input? string the case's input, replaced
---@field fixture? string the case's fixture, replaced (absolute)
---@field faults? table<string, evalua.Fault[]|false> fault rules by tool, each with its kind's defaults
---@field drop_tools? string[] tools not offered at all
---@field user? evalua.User the user, replaced
---@field checks? evalua.Check[] the checks that replace the case's, normalized
---@field _where string where it was declared (`file:line`)

---------------------------------------------------------------------------
-- Checks

--- A check: `run(t)` returns `passed, evidence` (raising is a grader error, never a pass or a fail).
---@class evalua.Check
---@field name? string the name shown in reports (default: `check@file:line`, or the constructor's label)
---@field critical? boolean a failure of a critical check makes the trial `critical` (default false)
---@field run fun(t: evalua.Trial): evalua.Verdict, any returns true/false (or `host.SKIP`) and evidence (any JSON-like value)
---@field kind? string the constructor that made it (`"sql"`, `"answer"`, `"judge"`, ...)
---@field options? table the kind's options, as the host reads them (`check.tests`: its `runner`, tests, `inject` and `timeout_s`)
---@field judge? table a judge check's spec (`judge.rubric`, `judge.pairwise`): models, criteria or question
---@field tools? string[] tool names the check mentions: each must be a tool of the suite (`evalua check` verifies)
---@field sql? string[] SQL queries the check runs: each is prepared against the case's fixture before any trial
---@field where? string `file:line` of the check's declaration
---@field prohibited? boolean listed in a case's `prohibited` (set by the DSL): its failure is an attack's success (SPEC §13)

--- The finished trial, as a check's `run(t)` sees it.
---@class evalua.Trial
---@field case evalua.Case the case table
---@field trial integer the trial number (1-based)
---@field seed integer the trial's seed
---@field answer string the agent's final message (possibly empty)
---@field ended evalua.Ended how the trial ended
---@field error? string why the agent stopped, when it did not end with a final answer
---@field calls evalua.Call[] every tool request, in order, whether or not it ran
---@field messages evalua.Message[] the conversation: the user's input, the agent's turns, the user's replies
---@field outbox evalua.OutboxItem[] what the tools sent (`ctx.send`): emails, messages
---@field usage evalua.Usage tokens, cost, turns, tool calls, wall time
---@field db evalua.Db read-only handle on the final database
---@field initial evalua.Db read-only handle on the database before the agent ran
---@field replay fun(self: evalua.Trial, calls: { name: string, args?: table }[]): evalua.Db the state `calls` leave on a fresh copy of the case's database (read-only)
---@field replay_digest fun(self: evalua.Trial, calls: { name: string, args?: table }[]): string `t:replay(calls):digest()`, computed once per fixture, clock and calls in the process
---@field files table<string, string> the work dir's files after the trial, by relative path (read on demand; `pairs` lists them)
---@field diff evalua.Diff the change the trial made to its work tree (against `sandbox.workdir`, or an empty tree)
---@field failure_modes string[] the monitors this trial failed (monitors run before the case's checks)
---@field spans? evalua.Span[] `evalua grade` only: every span of the item, in start order
---@field source? { file: string, trace_id?: string, conversation_id?: string } `evalua grade` only (and in `match`): where the item came from
local Trial = {}

--- The change a trial made: `files` (sorted by path) and a unified diff.
---@class evalua.Diff
---@field text string unified diff text (`--- a/x` / `+++ b/x`, `/dev/null` for added or deleted files)
---@field files { path: string, status: "added"|"modified"|"deleted" }[] every changed path

--- How a command ended (`ctx.exec`, `t.run_command`).
---@class evalua.CommandResult
---@field exit_code integer|evalua.Null its exit status (null when it was killed)
---@field signal integer|evalua.Null the signal that ended it, if any
---@field timed_out boolean killed at its timeout
---@field output_limited boolean killed for printing more than its output cap
---@field duration_ms number wall time
---@field stdout string the end of its stdout
---@field stderr string the end of its stderr
---@field stdout_bytes integer how much it printed on stdout in all
---@field stderr_bytes integer how much it printed on stderr in all

--- Run a command in a fresh copy of the final work dir (removed afterwards): `{ cmd, timeout_s = 60, max_output, tail, inject }`.
--- Returns nil and the reason when the command cannot start. Used by `check.command`.
---@param spec { cmd: string[]|string, timeout_s?: number, max_output?: integer, tail?: integer, inject?: string }
---@return evalua.CommandResult? result
---@return string? error
function Trial.run_command(spec) end

--- Run each test id as `runner ++ { id }` in one fresh copy of the final work dir with `inject` (an absolute folder) copied over it.
--- Returns nil and the reason when the runner cannot start. Used by `check.tests`.
---@param spec { runner: string[], tests: string[], inject?: string, timeout_s?: number }
---@return { id: string, passed: boolean, status: string, duration_ms: number, output: string }[]? runs
---@return string? error
function Trial.run_tests(spec) end

--- One tool request, as recorded in `t.calls`.
---@class evalua.Call
---@field id string the request's id
---@field name string the tool requested
---@field args table the arguments, as sent
---@field status evalua.CallStatus what became of it
---@field effect? evalua.Effect the tool's effect (nil for an unknown tool)
---@field result? any what the handler returned (executed calls)
---@field error? string why it failed, was rejected or denied
---@field error_type? string the error's class, when a recorded trace names it (`error.type`, an exception type)
---@field started_ms number when it started, in ms since the trial started
---@field ended_ms number when it ended, in ms since the trial started
---@field fault? evalua.CallFault the fault injected on this call (status `faulted`)

--- An injected fault, as recorded on its call.
---@class evalua.CallFault
---@field kind string the fault's kind (`"rate_limit"`, `"empty"`, ...)
---@field rule string which rule fired: `"on_call 2"`, `"probability 0.3"`, `"every call"`
---@field retry_after_s? number `rate_limit`: the wait the agent was told
---@field message? string the error the agent got, for kinds that fail the call
---@field handler_ran boolean whether the handler ran (its effects happened)
---@field handler_result? any what the handler returned, before the fault reshaped it
---@field changed? integer how many values the reshaping changed
---@field injected? string `inject`: the attacker's text planted in the result
---@field target? string `inject`: where it went (`"entries.2.message"`, `"result"`, `"injected"`, `"[N]"`)

--- One turn of the conversation.
---@class evalua.Message
---@field role "user"|"agent"|"tool" who spoke
---@field content string what was said
---@field call_id? string the call a tool turn answers

--- One item the tools sent, via `ctx.send(kind, to, body)`.
---@class evalua.OutboxItem
---@field kind string e.g. `"email"`
---@field to string the recipient (numbers become strings)
---@field body any the body (any JSON-like value)

--- What a trial used.
---@class evalua.Usage
---@field input_tokens integer input tokens reported by the agent
---@field output_tokens integer output tokens reported by the agent
---@field cost_usd number cost reported by the agent, in US dollars
---@field turns integer agent turns
---@field tool_calls integer tool calls requested
---@field wall_ms number the trial's wall time, in ms

---------------------------------------------------------------------------
-- Tool handlers

--- The context a tool handler's `run(ctx, args)` gets.
---@class evalua.Ctx
---@field db evalua.Db read-write handle on the trial's database
---@field case evalua.Case the case table
---@field trial integer the trial number (1-based)
---@field seed integer the trial's seed
---@field workdir string absolute path of the trial's work dir
local Ctx = {}

--- The frozen clock, as the case (or the sandbox) wrote it, e.g. `"2026-11-03T10:00:00Z"`.
---@return string
function Ctx.now() end

--- The frozen clock, in Unix seconds.
---@return integer
function Ctx.time() end

--- Send something outside (an email, a message): recorded in `t.outbox`.
---@param kind string e.g. `"email"`
---@param to string|number the recipient
---@param body any the body (any JSON-like value)
function Ctx.send(kind, to, body) end

--- The trial's seeded random numbers: `random()` a float in [0, 1), `random(n)` an integer in 1..n, `random(a, b)` one in a..b.
---@return number
---@overload fun(n: integer): integer
---@overload fun(a: integer, b: integer): integer
function Ctx.random() end

--- Write a file below the work dir (parent folders are created; paths may not leave it).
---@param path string a path relative to the work dir
---@param content string the file's content
function Ctx.write_file(path, content) end

--- Read a file below the work dir; nil when it does not exist.
---@param path string a path relative to the work dir
---@return string? content
function Ctx.read_file(path) end

--- The absolute path of `path` if it stays inside the work dir (no absolute path, no `..`, no symlink leading out); else nil and why.
---@param path string a path relative to the work dir
---@return string? absolute
---@return string? why
function Ctx.confine(path) end

--- The entries of a folder of the work dir (default its root), sorted by name; raises if the path leaves it.
---@param path? string a path relative to the work dir
---@return { name: string, type: "file"|"dir"|"symlink", size: integer }[]
function Ctx.list_dir(path) end

--- Run a command in the work dir (argv list, or a string for `sh -c`) in its own process group, killed at
--- `timeout_s` (default 30, never past the trial's deadline) or beyond `max_output` bytes; raises if it cannot start.
---@param cmd string[]|string the command
---@param opts? { timeout_s?: number, max_output?: integer, tail?: integer }
---@return evalua.CommandResult
function Ctx.exec(cmd, opts) end

--- Refuse the current tool call: it is recorded as `denied` with this reason (raises; the handler stops).
---@param reason string why
function Ctx.deny(reason) end

--- A database handle: `ctx.db` (read-write) or `t.db` / `t.initial` (read-only: writing raises).
--- Parameters bind to `?` placeholders in order.
---@class evalua.Db
local Db = {}

--- Run a statement (INSERT, UPDATE, DELETE, DDL); returns the number of rows changed.
---@param sql string the statement, with `?` placeholders
---@param ... evalua.SqlParam the parameters
---@return integer changed
function Db:exec(sql, ...) end

--- The first column of the first row; nil when there is no row or the value is NULL.
---@param sql string the query, with `?` placeholders
---@param ... evalua.SqlParam the parameters
---@return any value
function Db:one(sql, ...) end

--- The first row as `{ column = value }` (NULL columns absent); nil when there is no row.
---@param sql string the query, with `?` placeholders
---@param ... evalua.SqlParam the parameters
---@return table<string, any>? row
function Db:row(sql, ...) end

--- Every row as `{ column = value }` (NULL columns absent).
---@param sql string the query, with `?` placeholders
---@param ... evalua.SqlParam the parameters
---@return table<string, any>[] rows
function Db:all(sql, ...) end

--- Every row as a list of values in column order (NULL is `evalua.null`, so positions hold).
---@param sql string the query, with `?` placeholders
---@param ... evalua.SqlParam the parameters
---@return any[][] rows
function Db:rows(sql, ...) end

--- A digest of every table's content (rows as a multiset), to compare two states.
---@return string sha256 hex
function Db:digest() end

--- How this database differs from `other`: one entry per table that differs (empty: the same rows).
---@param other evalua.Db
---@param ignore? string[] "table" or "table.column" to leave out
---@return { table: string, only_in?: "here"|"there", only_here?: table[], only_there?: table[], changed?: { key: any, columns: table<string, { here: any, there: any }> }[], rows_here: integer, rows_there: integer }[]
function Db:diff(other, ignore) end

---------------------------------------------------------------------------
-- Scripted agents

--- The task a scripted agent's function gets as its first argument.
---@class evalua.Task
---@field input string the case's input
---@field case string the case's id
---@field trial integer the trial number (1-based)
---@field seed integer the trial's seed
---@field tools evalua.TaskTool[] the tools offered in this case
---@field metadata? table the case's metadata (a gold agent plays the case's reference solution from it)

--- A tool as offered to the agent.
---@class evalua.TaskTool
---@field name string the tool's name
---@field description string its description
---@field parameters evalua.JsonSchema its arguments' JSON Schema

--- What a scripted agent can do, its second argument.
---@class evalua.Env
local Env = {}

--- Request a tool, through the same executor as any agent (validation, policy, budget, recording).
---@param name string the tool's name
---@param args? table the arguments (default `{}`)
---@return any result what the tool returned (nil unless `"ok"`)
---@return evalua.ReplyStatus status `"ok"`, `"error"` or `"denied"`
---@return string? error why it was not ok
function Env.call(name, args) end

--- The trial's seeded random numbers: `random()` a float in [0, 1), `random(n)` an integer in 1..n, `random(a, b)` one in a..b.
---@return number
---@overload fun(n: integer): integer
---@overload fun(a: integer, b: integer): integer
function Env.random() end

--- A turn to the user; returns the (scripted) user's reply, or nil when there is none.
---@param text string what the agent says
---@return string? reply
function Env.say(text) end

--- Decline the task (SPEC §22): when the agent's function returns, the trial ends `abstained` with `reason` as its answer.
---@param reason string why the task is declined
---@return string reason the same reason (`return env.abstain("…")`)
function Env.abstain(reason) end

return evalua
