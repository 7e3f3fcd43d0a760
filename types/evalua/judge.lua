---@meta evalua.judge

-- Definitions of `require("evalua.judge")` for lua-language-server (LuaCATS).
-- The real module is stdlib/evalua/judge.lua: model-graded checks, for what
-- rules cannot decide. When no judge model is reachable by configuration (none
-- given, or no API key and no base URL) a judge check is *skipped*, never passed.

---@class evalua.judge
local judge = {}

--- A judge model: the options of `evalua.model` (shared with model agents), `model` required.
--- Reachable by configuration when `base_url` is given, or `EVALUA_OPENAI_BASE_URL` /
--- `OPENAI_BASE_URL` (`ANTHROPIC_…` for Anthropic) is set, or the API key variable is set.
---@class evalua.judge.Model
---@field provider? "openai"|"anthropic" the API (default "openai": any OpenAI-compatible server)
---@field model string the model name the server knows
---@field base_url? string default `$EVALUA_OPENAI_BASE_URL`, `$OPENAI_BASE_URL`, else https://api.openai.com/v1 (`ANTHROPIC_…`, https://api.anthropic.com)
---@field api_key_env? string the environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY); the key is never written to a run file
---@field temperature? number default 0
---@field seed? integer passed through to the server
---@field max_tokens? integer the judge's answer length limit
---@field timeout_s? number per request
---@field max_retries? integer retries on 429 / 5xx before the call is a grader error
---@field prices? { input: number, output: number } USD per million tokens (default: the built-in table)
---@field max_concurrency? integer requests in flight at once to this base URL

--- Declare a judge model (validated here, resolved against the environment at run time).
---@param spec evalua.judge.Model
---@return evalua.judge.Model
function judge.model(spec) end

--- Whether a judge model is reachable by configuration, and why not (for a suite that prints a clear skip message).
---@param model evalua.judge.Model|string
---@return boolean reachable
---@return string? why_not
function judge.reachable(model) end

--- `judge.rubric { "criterion", ..., model = ..., panel = {...} }`: criteria are the list items.
---@class evalua.judge.RubricSpec
---@field [integer] string a criterion, judged pass/fail on its own (at least one, non-empty)
---@field name? string the check's name (default: `rubric: ` and the first criterion)
---@field critical? boolean a failure makes the trial `critical` (default false)
---@field model? evalua.judge.Model|string the judge (`"gpt-4.1-mini"`, `"anthropic:claude-…"` or `judge.model{...}`); without `model` or `panel` the check is skipped
---@field panel? (evalua.judge.Model|string)[] two or more judges: each criterion takes the verdict of a strict majority of the whole panel

--- A model-graded check: a binary verdict per criterion. Fails when a
--- criterion fails; a grader error when the judge's answer is invalid, refused,
--- fails at the API or leaves a criterion undeterminable; skipped (not passed)
--- when no judge model is reachable.
---@param spec evalua.judge.RubricSpec
---@return evalua.Check
function judge.rubric(spec) end

---@class evalua.judge.PairwiseSpec
---@field a? string|fun(t: evalua.Trial): string the output judged (default: the agent's answer)
---@field b string|fun(t: evalua.Trial): string what it is compared with (e.g. a reference answer)
---@field question? string what "better" means (default "Which response better accomplishes the task?")
---@field model evalua.judge.Model|string the judge
---@field pass? "a"|"a_or_tie" passes when a wins, or (default) when a does not lose
---@field name? string
---@field critical? boolean

--- Compare two outputs in both orders (a,b then b,a); when the orders disagree the result is a tie.
---@param spec evalua.judge.PairwiseSpec
---@return evalua.Check
function judge.pairwise(spec) end

---@class evalua.judge.CascadeSpec
---@field first evalua.Check a `judge.rubric` (the cheap judge): grades every item
---@field then? evalua.Check a `judge.rubric` of the same criteria (the bigger judge): grades only the escalated items. `then` is a Lua keyword: write `["then"] = judge.rubric {...}`
---@field second? evalua.Check the same as `["then"]`, spelled without brackets
---@field escalate "uncertain"|"disagree"|"always_on_fail" which items go on: the first judge could not decide (undeterminable, invalid answer); its panel's votes differ (`first` must be a panel); or every fail
---@field name? string the check's name (default: `cascade: ` and the first criterion)
---@field critical? boolean

--- Two judges in a row: the first grades every item, the second only those
--- `escalate` selects, and then its verdict decides. The evidence records
--- `decided_by` ("first" or "then") and each stage's calls and cost;
--- summary.json gives the escalation rate and each judge's calls and cost.
---@param spec evalua.judge.CascadeSpec
---@return evalua.Check
function judge.cascade(spec) end

return judge
