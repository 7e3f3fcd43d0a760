---@meta evalua.check

-- Definitions of `require("evalua.check")` for lua-language-server (LuaCATS).
-- The real module is stdlib/evalua/check.lua. Every constructor validates its
-- options when the suite loads and returns an `evalua.Check`
-- (`{ name, critical, run }`). Every options table also takes `name` and
-- `critical`.

---@class evalua.check
local check = {}

--- Options every check takes.
---@class evalua.CheckOpts
---@field name? string the name shown in reports (default: a label made from the arguments)
---@field critical? boolean a failure makes the trial `critical` (default false)

---------------------------------------------------------------------------
-- Final state

--- Options of `check.sql`: exactly one of `equals`, `rows` or `empty`.
---@class evalua.check.SqlOpts: evalua.CheckOpts
---@field equals? any the first column of the first row equals this (`evalua.null` for NULL)
---@field tolerance? number numbers compare within this (default 0), for `equals` and `rows`
---@field rows? any[][] the result rows equal these (a multiset unless `ordered`)
---@field ordered? boolean compare `rows` in order
---@field empty? boolean true: no rows, or a single 0 / NULL; false: the opposite

--- SQL on the final database (`t.db`): `equals` (first column of the first row), `rows` (a multiset unless `ordered`), or `empty`.
---@param q string the query
---@param opts evalua.check.SqlOpts
---@return evalua.Check
function check.sql(q, opts) end

--- What one path of the work dir must be like.
---@class evalua.check.FileExpect
---@field exists? boolean the file exists (default: true when `contains` or `matches` is given)
---@field contains? string the content contains this text
---@field matches? string the content matches this regex (Rust `regex` syntax)

--- The work dir after the trial: `{ [path] = { exists = bool, contains = s, matches = re } }`.
---@param spec table<string, evalua.check.FileExpect> expectations by path, relative to the work dir
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.files(spec, opts) end

--- Options of `check.outbox`: `to`, `contains` and `kind` filter the items; `count` is checked on what remains.
---@class evalua.check.OutboxOpts: evalua.CheckOpts
---@field count? integer exactly this many items match (default: at least one)
---@field to? string|number only items to this recipient
---@field contains? string only items whose body contains this text
---@field kind? string only items of this kind (e.g. `"email"`)

--- What the tools sent (`t.outbox`): `{ count = n, to = s, contains = s, kind = s }`.
---@param opts? evalua.check.OutboxOpts
---@return evalua.Check
function check.outbox(opts) end

---------------------------------------------------------------------------
-- The final answer

--- Options of `check.answer`: exactly one of `equals`, `contains`, `matches`, `set`, `number`, `datetime`.
---@class evalua.check.AnswerOpts: evalua.CheckOpts
---@field equals? string the trimmed answer equals this
---@field contains? string the trimmed answer contains this
---@field matches? string the trimmed answer matches this regex (Rust `regex` syntax, e.g. `(?i)` for case folding)
---@field normalize? boolean also fold case and inner whitespace (for equals, contains, set)
---@field set? (string|number)[] the `extract` matches of the answer, as a set, equal these; a repeated item fails a second check, `duplicate`
---@field extract? string with `set`: a regex whose matches (or first capture group) are the items
---@field number? number the first number in the answer (`19.90` or `19,90`) equals this
---@field tolerance? number with `number`: the allowed difference (default 0)
---@field datetime? string the first date or datetime in the answer is this instant (ISO 8601)
---@field zone? string with `datetime`: the zone of values without an offset (`"UTC"` default, `"+02:00"` or an IANA name)

--- Checks on the agent's final answer (trimmed). With `set`, returns two checks (the set, and no duplicate).
---@param opts evalua.check.AnswerOpts
---@return evalua.Check|evalua.Check[]
function check.answer(opts) end

--- The answer parses as JSON and validates against `schema`.
---@param schema evalua.JsonSchema
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.json_schema(schema, opts) end

---------------------------------------------------------------------------
-- The trajectory

--- Which calls a trajectory check counts: `"executed"` (the default: the handler ran), `"requested"` (every call, whatever its status) or `"succeeded"` (executed, and the result reports no error).
---@alias evalua.check.Calls "executed"|"requested"|"succeeded"

--- Options of `check.before`.
---@class evalua.check.BeforeOpts: evalua.CheckOpts
---@field calls? evalua.check.Calls which `a` counts as before (default `"executed"`: even one whose result reports a failure; `"succeeded"`: only a successful one)

--- Options of `check.tools`.
---@class evalua.check.ToolsOpts: evalua.CheckOpts
---@field mode? "exact"|"in_order"|"any_order" `"exact"`: the same sequence; `"in_order"` (default): a subsequence; `"any_order"`: a multiset
---@field min_recall? number expected calls matched / expected, at least (default 1)
---@field min_precision? number matched / counted calls, at least (default 0)
---@field calls? evalua.check.Calls which calls count (default `"executed"`)

--- Executed calls against an expected list of tool names; evidence reports recall and precision.
---@param list string[] the expected tool names
---@param opts? evalua.check.ToolsOpts
---@return evalua.Check
function check.tools(list, opts) end

--- An expected argument: a plain value (deep equality), a comparator from `check.cmp.*`, or `function(actual) return ok end`.
---@alias evalua.check.ArgExpect any|evalua.check.Comparator|fun(actual: any): boolean

--- Every executed call of `tool` has matching arguments (at least one such call must exist).
---@param tool string the tool's name
---@param fields table<string, evalua.check.ArgExpect> expected arguments, by field
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.args(tool, fields, opts) end

--- Every executed `b` comes after an executed `a` (or, with `calls = "succeeded"`, a successful `a`).
---@param a string the tool that must come first
---@param b string the tool that must come after
---@param opts? evalua.check.BeforeOpts
---@return evalua.Check
function check.before(a, b, opts) end

--- Options of `check.no_loops`.
---@class evalua.check.NoLoopsOpts: evalua.CheckOpts
---@field max_repeats? integer a (tool, args) pair may be requested at most this many times (default 2)

--- No (tool, args) pair is requested more than `max_repeats` times.
---@param opts? evalua.check.NoLoopsOpts
---@return evalua.Check
function check.no_loops(opts) end

--- Options of `check.retries`.
---@class evalua.check.RetriesOpts: evalua.CheckOpts
---@field tool? string only this tool (default: every tool)
---@field max? integer retries allowed after a failure (default 1)
---@field after? "rate_limit"|"error"|"any" which failures open a streak (default "error")

--- No tool is called again more than `max` times after a failed or faulted call of the kind `after` names
--- ("rate_limit": a faulted rate limit, or an error saying 429 / rate limit; "error": any failed or faulted call;
--- "any": any other call the agent was not told succeeded). A successful call of the tool ends the streak
--- (a result reshaped by `empty`, `partial`, `stale` or `inject` is a success; a `timeout` with its effect applied is not).
---@param opts? evalua.check.RetriesOpts
---@return evalua.Check
function check.retries(opts) end

--- The final database equals the state `calls` (the case's gold calls) leave on a fresh copy of the fixture.
---@param calls { name: string, args?: table }[]
---@param opts? { name?: string, critical?: boolean, ignore?: string[] }
---@return evalua.Check
function check.same_state(calls, opts) end

--- No write/external tool ran (executed, or faulted after its handler ran) and the database equals the initial one.
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.no_writes(opts) end

--- Passes when the agent's run ended one of these ways (default { "final" }).
---@param list? ("final"|"abstained"|"deadline"|"budget"|"crashed"|"protocol_error"|"infra_error")[]
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.ended(list, opts) end

--- Passes when the agent abstained (SPEC §22): the default `expect` of a `should_abstain` case.
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.abstained(opts) end

--- At most `n` tool calls were requested.
---@param n integer the maximum
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.max_calls(n, opts) end

--- The trial took at most `max_ratio` times what the case's reference solution takes
--- (`reference = { calls = N, tokens = M }`): its tool calls requested and, when the
--- reference gives them, its tokens. Skipped (never passed) when the case has no reference.
---@param opts? { max_ratio?: number, measure?: "calls"|"executed_calls"|"tokens", name?: string, critical?: boolean } `max_ratio` defaults to the reference's own (2 unless set); `measure` limits the check to one ratio
---@return evalua.Check
function check.efficiency(opts) end

--- If the answer matches `pattern` (a claim of success), `tool` was executed first.
---@param pattern string a regex (Rust `regex` syntax)
---@param tool string the tool that backs the claim
---@param opts? evalua.CheckOpts
---@return evalua.Check
function check.claims_only_after(pattern, tool, opts) end

---------------------------------------------------------------------------
-- Comparators, for `check.args`

--- A comparator, as made by `check.cmp.*`.
---@class evalua.check.Comparator
---@field expected any the expected value
---@field _cmp fun(actual: any): boolean (internal) the comparison `check.args` calls

--- Comparators for `check.args` fields.
check.cmp = {}

--- `check.cmp.number { expected, tolerance = x }`.
---@class evalua.check.CmpNumber
---@field [1] number the expected number
---@field tolerance? number the allowed difference (default 0)

--- Numbers within `tolerance`: `check.cmp.number { 19.90, tolerance = 0.005 }`.
---@param spec evalua.check.CmpNumber
---@return evalua.check.Comparator
function check.cmp.number(spec) end

--- `check.cmp.datetime { expected, zone = z }`.
---@class evalua.check.CmpDatetime
---@field [1] string the expected date or datetime (ISO 8601)
---@field zone? string the zone of values without an offset (`"UTC"` default, `"+02:00"` or an IANA name)

--- Datetimes compared as instants: `check.cmp.datetime { "2026-11-03T10:00:00Z", zone = "Europe/Madrid" }`.
---@param spec evalua.check.CmpDatetime
---@return evalua.check.Comparator
function check.cmp.datetime(spec) end

--- `check.cmp.text { expected, normalize = bool }`.
---@class evalua.check.CmpText
---@field [1] string the expected text
---@field normalize? boolean fold case and whitespace before comparing

--- Text, optionally folding case and whitespace: `check.cmp.text { "Hello", normalize = true }`.
---@param spec evalua.check.CmpText
---@return evalua.check.Comparator
function check.cmp.text(spec) end

---------------------------------------------------------------------------
-- Coding agents: the work tree after the trial

--- Options of `check.command`.
---@class evalua.check.CommandOpts: evalua.CheckOpts
---@field cmd string[]|string the command (argv list, or a string for `sh -c`) (required)
---@field timeout_s? number killed after this many seconds: a fail (default 60)
---@field expect_exit? integer the exit status that passes (default 0)
---@field inject? string a folder (relative to the suite) copied over the tree first
---@field max_output? integer killed beyond this many bytes of output: a fail (default 16 MiB)

--- Run a command in a fresh copy of the final work dir; evidence: exit status, duration, tails of stdout/stderr.
--- A command that cannot start is a grader error, not a fail.
---@param opts evalua.check.CommandOpts
---@return evalua.Check
function check.command(opts) end

--- Options of `check.tests`.
---@class evalua.check.TestsOpts: evalua.CheckOpts
---@field runner string[] the test runner; each test id is appended and run alone (exit 0 = pass) (required)
---@field inject? string a folder of hidden tests (relative to the suite) copied over the tree only at grading time
---@field fail_to_pass? string[] test ids that must pass after the change (and must fail on the initial tree)
---@field pass_to_pass? string[] test ids that must keep passing (and must pass on the initial tree)
---@field timeout_s? number per test (default 60)

--- SWE-bench style: hidden tests injected into a copy of the final tree; every listed test must pass.
--- Before the first trial, `evalua run` and `evalua check` verify each case on its initial tree.
---@param opts evalua.check.TestsOpts
---@return evalua.Check
function check.tests(opts) end

--- Options of `check.scope`: globs on `/`-separated paths (`*` within a folder, `**` across).
---@class evalua.check.ScopeOpts: evalua.CheckOpts
---@field allowed? string[] every changed path must match one of these
---@field forbidden? string[] no changed path may match any of these
---@field ignore? string[] changed paths left out (default `{ "**/__pycache__/**" }`)

--- The change (`t.diff.files`) stays inside `allowed` and out of `forbidden`.
---@param opts evalua.check.ScopeOpts
---@return evalua.Check
function check.scope(opts) end

--- Options of `check.no_secrets`.
---@class evalua.check.NoSecretsOpts: evalua.CheckOpts
---@field env? string[] environment variables whose values must not appear
---@field patterns? string[] regexes that must not match

--- No secret value or pattern in the diff, the answer, the outbox or any tool call's arguments; evidence is redacted.
---@param opts evalua.check.NoSecretsOpts
---@return evalua.Check
function check.no_secrets(opts) end

return check
