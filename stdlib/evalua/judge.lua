-- evalua.judge: model-graded checks, for what rules cannot decide.
--
-- A rubric asks for a binary verdict per criterion. When no judge model is
-- configured the check is *skipped*, never passed: the trial's outcome comes
-- from its other checks and the skip is counted in the summary.

local host = require("evalua.host")
local evalua = require("evalua")

local judge = {}

local RUBRIC_KEYS = { name = true, critical = true, model = true, panel = true }

--- judge.rubric { "criterion", ..., model = ..., panel = {...} }
function judge.rubric(spec)
  if type(spec) ~= "table" then error("judge.rubric expects a table of criteria", 2) end
  local criteria = {}
  for k, v in pairs(spec) do
    if math.type(k) == "integer" then
      if type(v) ~= "string" or v == "" then error("judge.rubric: criterion " .. k .. " must be a non-empty string", 2) end
      criteria[k] = v
    elseif not RUBRIC_KEYS[k] then
      error("judge.rubric: unknown option '" .. tostring(k) .. "'", 2)
    end
  end
  if #criteria == 0 then error("judge.rubric: give at least one criterion", 2) end
  local name = spec.name or ("rubric: " .. criteria[1]:sub(1, 50))
  return {
    name = name,
    critical = spec.critical or false,
    kind = "judge",
    run = function(t)
      if spec.model == nil and spec.panel == nil then
        return host.SKIP, "no judge model configured"
      end
      error("judge models are not available in this build of evalua yet")
    end,
  }
end

if not host.validating() then judge.rubric = evalua._lazy(judge.rubric) end

return judge
