-- evalua.judge: model-graded checks, for what rules cannot decide.
--
-- A rubric asks for a binary verdict per criterion. When no judge model is
-- reachable by configuration (none given, or no API key and no base URL) the
-- check is *skipped*, never passed: the trial's outcome comes from its other
-- checks and the skip is counted in the summary. The work (prompts, calls,
-- validation, cache) is in the host: src/judge/.

local host = require("evalua.host")
local evalua = require("evalua")

local judge = {}

local function set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

-- Declared once, in Rust: spec::ModelSpec's fields (and the normalised
-- table's `kind`), spec::Provider.
local MODEL_KEYS = set(host.fields("model"))
MODEL_KEYS.kind = true
local PROVIDERS = set(host.fields("providers"))

-- A judge's model: the options of evalua.model (shared with model agents and
-- simulated users), with `model` required (a judge is calibrated per model)
-- and temperature 0 unless set.
local function model_spec(m, what, level)
  level = level + 1
  if type(m) == "string" then
    -- "gpt-4.1-mini" (OpenAI-compatible) or "provider:model"
    local provider, name = m:match("^(%w+):(.+)$")
    if provider and PROVIDERS[provider] then m = { provider = provider, model = name } else m = { model = m } end
  end
  if type(m) ~= "table" then
    error(what .. ": a judge model is judge.model { ... } (or evalua.model { ... }) or a model name, got " .. type(m), level)
  end
  for k in pairs(m) do
    if type(k) ~= "string" or not MODEL_KEYS[k] then
      error(what .. ": unknown key '" .. tostring(k) .. "' in the judge model (known: "
        .. table.concat(host.fields("model"), ", ") .. ")", level)
    end
  end
  if type(m.model) ~= "string" or m.model == "" then
    error(what .. ": 'model' is required for a judge (its verdicts and calibration are per model)", level)
  end
  local ok, o = pcall(evalua._model_options, what, m, m.provider, 1)
  if not ok then error(tostring(o):gsub("^[^:]*:%d+: ", ""), level) end
  o.kind = "judge_model"
  if o.temperature == nil then o.temperature = 0 end
  return o
end

--- A judge model: judge.model { provider = "openai", model = "gpt-4.1-mini", base_url = ..., api_key_env = ... }
function judge.model(spec)
  local m = model_spec(spec, "judge.model", 2)   -- not a tail call: errors name the caller's line
  return m
end

--- Whether a judge model is reachable by configuration (a key or a base URL), and why not.
function judge.reachable(m)
  return host.judge_reachable(model_spec(m, "judge.reachable", 2))
end

local RUBRIC_KEYS = set { "name", "critical", "model", "panel" }

local function models_of(spec, level)
  level = level + 1
  if spec.model ~= nil and spec.panel ~= nil then
    error("give 'model' (one judge) or 'panel' (several, majority vote), not both", level)
  end
  local models = {}
  if spec.model ~= nil then models[1] = model_spec(spec.model, "model", level) end
  if spec.panel ~= nil then
    if type(spec.panel) ~= "table" or #spec.panel < 2 then
      error("'panel' must list at least two judge models", level)
    end
    for i, m in ipairs(spec.panel) do models[i] = model_spec(m, "panel[" .. i .. "]", level) end
  end
  return host.array(models)
end

--- judge.rubric { "criterion", ..., model = ..., panel = {...}, name = ..., critical = ... }
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
  local ok, err = pcall(models_of, spec, 1)
  if not ok then error("judge.rubric: " .. tostring(err):gsub("^[^:]*:%d+: ", ""), 2) end
  local name = spec.name or ("rubric: " .. criteria[1]:sub(1, 50))
  local jspec = { type = "rubric", name = name, criteria = host.array(criteria), models = err, panel = spec.panel ~= nil }
  local parsed = host.judge_spec(jspec)   -- parsed once, here, not at every check
  return {
    name = name,
    critical = spec.critical or false,
    kind = "judge",
    judge = jspec,
    run = function(t) return host.judge_rubric(parsed, t) end,
  }
end

local PAIRWISE_KEYS = set { "name", "critical", "model", "a", "b", "question", "pass" }

local function text_of(v, t, what)
  if type(v) == "function" then v = v(t) end
  if type(v) ~= "string" then error("judge.pairwise: '" .. what .. "' must give a string, got " .. type(v), 0) end
  return v
end

--- judge.pairwise { b = "reference", a = function(t) ... end, question = "...", model = ... }
function judge.pairwise(spec)
  if type(spec) ~= "table" then error("judge.pairwise expects a table", 2) end
  for k in pairs(spec) do
    if not PAIRWISE_KEYS[k] then error("judge.pairwise: unknown option '" .. tostring(k) .. "'", 2) end
  end
  if spec.b == nil then error("judge.pairwise: 'b' is required (a string, or a function(t) returning one)", 2) end
  for _, k in ipairs { "a", "b" } do
    local v = spec[k]
    if v ~= nil and type(v) ~= "string" and type(v) ~= "function" then
      error("judge.pairwise: '" .. k .. "' must be a string or a function(t)", 2)
    end
  end
  if spec.question ~= nil and type(spec.question) ~= "string" then error("judge.pairwise: 'question' must be a string", 2) end
  if spec.pass ~= nil and spec.pass ~= "a" and spec.pass ~= "a_or_tie" then
    error("judge.pairwise: 'pass' must be \"a\" (a wins) or \"a_or_tie\" (a does not lose)", 2)
  end
  if spec.panel ~= nil then error("judge.pairwise: a panel is not supported; give one model", 2) end
  local ok, models = pcall(models_of, spec, 1)
  if not ok then error("judge.pairwise: " .. tostring(models):gsub("^[^:]*:%d+: ", ""), 2) end
  local question = spec.question or "Which response better accomplishes the task?"
  local name = spec.name or ("pairwise: " .. question:sub(1, 50))
  local jspec = { type = "pairwise", name = name, question = question, models = models, pass = spec.pass or "a_or_tie" }
  local parsed = host.judge_spec(jspec)   -- parsed once, here, not at every check
  local a = spec.a or function(t) return t.answer end
  return {
    name = name,
    critical = spec.critical or false,
    kind = "judge",
    judge = jspec,
    run = function(t) return host.judge_pairwise(parsed, text_of(a, t, "a"), text_of(spec.b, t, "b"), t) end,
  }
end

local CASCADE_KEYS = set { "name", "critical", "first", "then", "second", "escalate" }
local ESCALATE = set { "uncertain", "disagree", "always_on_fail" }

-- A stage as written: a check built by judge.rubric (in a trial, its lazy record).
local function stage_of(v, what)
  if type(v) == "table" and v.__lazy then v = v.__lazy(table.unpack(v, 1, v.n)) end
  if type(v) ~= "table" or type(v.judge) ~= "table" or v.judge.type ~= "rubric" then
    error("judge.cascade: '" .. what .. "' must be a judge.rubric { ... }", 3)
  end
  return v.judge
end

--- judge.cascade { first = judge.rubric {...}, ["then"] = judge.rubric {...}, escalate = "uncertain" | "disagree" | "always_on_fail" }
--- (`then` is a Lua keyword: write ["then"] = ..., or second = ...)
function judge.cascade(spec)
  if type(spec) ~= "table" then error("judge.cascade expects a table", 2) end
  for k in pairs(spec) do
    if not CASCADE_KEYS[k] then error("judge.cascade: unknown option '" .. tostring(k) .. "'", 2) end
  end
  if not ESCALATE[spec.escalate] then
    error("judge.cascade: escalate must be \"uncertain\", \"disagree\" or \"always_on_fail\", got " .. tostring(spec.escalate), 2)
  end
  if spec["then"] ~= nil and spec.second ~= nil then
    error("judge.cascade: give the second judge once: [\"then\"] = ... or second = ...", 2)
  end
  if spec.first == nil or (spec["then"] == nil and spec.second == nil) then
    error("judge.cascade: give first = judge.rubric {...} and [\"then\"] = judge.rubric {...} (or second = ...)", 2)
  end
  local first = stage_of(spec.first, "first")
  local second = stage_of(spec["then"] or spec.second, spec.second and "second" or "then")
  local same = #first.criteria == #second.criteria
  for i, c in ipairs(first.criteria) do same = same and second.criteria[i] == c end
  if not same then
    error("judge.cascade: 'first' and 'then' must grade the same criteria, in the same order", 2)
  end
  if spec.escalate == "disagree" and not first.panel then
    error("judge.cascade: escalate = \"disagree\" needs a panel as the first judge (panel = { ... }): one judge cannot disagree with itself", 2)
  end
  local name = spec.name or ("cascade: " .. first.criteria[1]:sub(1, 50))
  local jspec = { type = "cascade", name = name, first = first, ["then"] = second, escalate = spec.escalate }
  local parsed = host.judge_spec(jspec)   -- parsed once, here, not at every check
  return {
    name = name,
    critical = spec.critical or false,
    kind = "judge",
    judge = jspec,
    run = function(t) return host.judge_cascade(parsed, t) end,
  }
end

if not host.validating() then
  judge.rubric = evalua._lazy(judge.rubric)
  judge.pairwise = evalua._lazy(judge.pairwise)
  judge.cascade = evalua._lazy(judge.cascade)
end

return judge
