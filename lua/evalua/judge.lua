---@meta evalua.judge

-- Definitions of `require("evalua.judge")` for lua-language-server (LuaCATS).
-- The real module is stdlib/evalua/judge.lua: model-graded checks, for what
-- rules cannot decide. When no judge model is configured a rubric is
-- *skipped*, never passed.

---@class evalua.judge
local judge = {}

--- `judge.rubric { "criterion", ..., model = ..., panel = {...} }`: criteria are the list items.
---@class evalua.judge.RubricSpec
---@field [integer] string a criterion, judged pass/fail on its own (at least one, non-empty)
---@field name? string the check's name (default: `rubric: ` and the first criterion)
---@field critical? boolean a failure makes the trial `critical` (default false)
---@field model? string the judge model; without `model` or `panel` the check is skipped
---@field panel? string[] several judge models

--- A model-graded check: a binary verdict per criterion; skipped (not passed) when no judge model is configured.
---@param spec evalua.judge.RubricSpec
---@return evalua.Check
function judge.rubric(spec) end

return judge
