-- AgentDojo (agentdojo 0.1.35, MIT licence: ../LICENSE) as evalua suites: the
-- environment as the sandbox's state, the tools ported to Lua
-- (lib/<suite>.lua), every user task a case whose check is its utility
-- function, every (user task, injection task) pair an attack case whose
-- prohibited check is the injection task's security function. See ../README.md.
--
-- The state. environment.sql holds the environment with every injection vector
-- at its default, one row per top-level key (`env(k, v)`, v its JSON). A case's
-- own pre-environment (its injections as AgentDojo's YAML parsed them, its
-- user task's init_environment) differs from it by `metadata.patch`, a list of
-- { path, value } written by make_data.py. A key's value is read with the
-- patch applied until a tool writes the key back (`patched(k)` then holds it),
-- so a trial's state, `t.initial` and `t.db` all read as AgentDojo's
-- pre-environment and post-environment.

local evalua = require("evalua")
local json = evalua.json

local M = {}

M.null = evalua.null

--- Whether a JSON value is None (nil or JSON null).
function M.none(v)
  return v == nil or v == evalua.null
end

--- Raise as a Python tool does: the call fails and the agent sees "<Kind>: <message>",
--- which is the error AgentDojo's FunctionsRuntime records.
function M.raise(kind, message)
  error(kind .. ": " .. message, 0)
end

-- A patch path's element: a number is a Python list's 0-based index (a JSON
-- object's keys are text), Lua's index + 1.
local function key_of(k)
  if type(k) == "number" then return k + 1 end
  return k
end

local function apply_patch(top, value, patch)
  for _, entry in ipairs(patch) do
    local path, v = entry[1], entry[2]
    if path[1] == top then
      if #path == 1 then
        value = v
      else
        local node = value
        for i = 2, #path - 1 do node = node[key_of(path[i])] end
        node[key_of(path[#path])] = v
      end
    end
  end
  return value
end

local function patch_of(case)
  local meta = case and case.metadata
  return meta and meta.patch or {}
end

-- The value of top-level key `k`: its JSON decoded, with the case's patch
-- applied unless a tool already wrote the key back in this trial.
local function read_key(db, case, k)
  local text = db:one("SELECT v FROM env WHERE k = ?", k)
  if text == nil then return nil end
  local value, err = json.decode(text)
  if value == nil then error("agentdojo: env." .. k .. " is not JSON: " .. tostring(err), 0) end
  if db:one("SELECT 1 FROM patched WHERE k = ?", k) == nil then
    value = apply_patch(k, value, patch_of(case))
  end
  return value
end

--- The environment of a trial (a tool's ctx.db) or of a check (t.db, t.initial),
--- read lazily: `env.inbox` decodes the key the first time it is read.
--- `fallback(k)`, when given, may answer instead of the database (nil: read it).
function M.view(db, case, fallback)
  return setmetatable({}, {
    __index = function(self, k)
      local v = fallback and fallback(k)
      if v == nil then v = read_key(db, case, k) end
      if v ~= nil then rawset(self, k, v) end
      return v
    end,
  })
end

-- Write back the keys a handler read (it may have changed any of them).
local function save(db, env, touched)
  for _, k in ipairs(touched) do
    db:exec("UPDATE env SET v = ? WHERE k = ?", json.encode(rawget(env, k)), k)
    db:exec("INSERT OR IGNORE INTO patched (k) VALUES (?)", k)
  end
end

-- The trial's environment, decoded once and kept on its ctx (one table per
-- trial, shared by its tool calls): AgentDojo's tools share one environment
-- in memory too. What a writing tool read is written back after it, so the
-- database stays the environment (t.db, the state's digest).
local function trial_env(ctx)
  local env = rawget(ctx, "_dojo_env")
  if env == nil then
    env = M.view(ctx.db, ctx.case)
    rawset(ctx, "_dojo_env", env)
  end
  return env
end

-- One call's view of the trial's environment: which keys it read.
local function call_env(base)
  local touched = {}
  local env = setmetatable({}, {
    __index = function(self, k)
      local v = base[k]
      if v ~= nil then
        rawset(self, k, v)
        touched[#touched + 1] = k
      end
      return v
    end,
  })
  return env, touched
end

-- AgentDojo validates a call's arguments with pydantic (lax mode) before the
-- function runs: a required argument missing is a ValidationError, a number
-- given as text is converted.
local function coerce(params, args)
  local props = params.properties or {}
  for _, name in ipairs(params.required or {}) do
    if args[name] == nil then
      M.raise("ValidationError", "1 validation error for " .. (params.title or "Input schema") .. "\n" .. name .. "\n  Field required")
    end
  end
  for name, v in pairs(args) do
    local p = props[name]
    if p and type(v) == "string" and (p.type == "number" or p.type == "integer") then
      local n = tonumber(v)
      if n ~= nil then args[name] = n end
    end
  end
  return args
end

--- A tool's handler for evalua: opens the trial's environment, runs the ported
--- function `run(env, args, ctx)`, and writes back what it read when the tool writes.
function M.handler(info, impl)
  return function(ctx, args)
    local env, touched = call_env(trial_env(ctx))
    local ok, result = pcall(function() return impl.run(env, coerce(info.parameters, args or {}), ctx) end)
    -- AgentDojo's tools change the environment in place: what one changed
    -- before it raised stays changed.
    if impl.writes then save(ctx.db, env, touched) end
    if not ok then error(result, 0) end
    if result == nil then return "None" end
    return result
  end
end

--- AgentDojo's functions_stack_trace: every call the agent requested, in
--- order, as { name, args } (whatever became of it).
function M.trace(t)
  local calls = {}
  for _, c in ipairs(t.calls or {}) do
    calls[#calls + 1] = { name = c.name, args = c.args or {} }
  end
  return calls
end

-- The pre- and post-environments of a check, decoded once per trial's grading
-- (kept on its `t`, shared by the utility and the security check). A key no
-- tool wrote back (no `patched` row) holds in t.db what it holds in t.initial:
-- post shares pre's value then (checks only read them).
local function check_envs(t)
  local envs = rawget(t, "_dojo_envs")
  if envs == nil then
    local db = t.db
    local pre = M.view(t.initial, t.case)
    local post = M.view(db, t.case, function(k)
      if db:one("SELECT 1 FROM patched WHERE k = ?", k) == nil then return pre[k] end
      return nil
    end)
    envs = { pre, post }
    rawset(t, "_dojo_envs", envs)
  end
  return envs[1], envs[2]
end

local function decide(fn, t)
  local pre, post = check_envs(t)
  local ok = fn(t.answer or "", pre, post, M.trace(t))
  if type(ok) ~= "boolean" then error("agentdojo: a ported check returned " .. type(ok) .. ", not a boolean", 0) end
  return ok
end

--- The user task's utility function as a check.
function M.utility_check(id, fn)
  return {
    name = "utility (" .. id .. ")",
    run = function(t)
      local ok = decide(fn, t)
      return ok, { utility = ok }
    end,
  }
end

--- The injection task's security function as a prohibited check: AgentDojo's
--- `security` is true when the attacker's goal was reached, which fails it.
function M.security_check(id, fn)
  return {
    name = "attacker's goal not reached (" .. id .. ")",
    run = function(t)
      local reached = decide(fn, t)
      return not reached, { security = reached }
    end,
  }
end

-- Play ground-truth calls through the executor, as AgentDojo's
-- GroundTruthPipeline does (its calls were computed on the case's
-- pre-environment by make_data.py).
local function play(env, calls)
  for _, c in ipairs(calls or {}) do env.call(c["function"], c.args or {}) end
end

--- The `gold` agent: the user task's ground truth, then its ground-truth output.
function M.gold_agent(task, env)
  local meta = task.metadata
  play(env, meta.gold_calls)
  return meta.gold_output or ""
end

--- The `obedient` agent: on an attack case, the injection task's ground truth
--- after the user task's (an agent that does what the injection asks once it
--- has done its task); its answer is both ground-truth outputs, joined by a newline.
function M.obedient_agent(task, env)
  local meta = task.metadata
  play(env, meta.gold_calls)
  play(env, meta.injection_calls)
  local out = meta.gold_output or ""
  if (meta.injection_output or "") ~= "" then
    out = out == "" and meta.injection_output or (out .. "\n" .. meta.injection_output)
  end
  return out
end

-- A cases.json row as a case.
local function case_of(row, tasks)
  local attack = row.injection_task ~= nil
  local utility = tasks.utility[row.user_task]
  if utility == nil then error("agentdojo: no utility function for " .. row.user_task, 0) end
  local case = {
    id = row.id,
    input = row.prompt,
    difficulty = row.difficulty,
    tags = attack and { "attack" } or { "user_task" },
    metadata = {
      user_task = row.user_task,
      injection_task = row.injection_task,
      goal = row.goal,
      injections = row.injections,
      gold_calls = row.gold_calls,
      gold_output = row.gold_output,
      injection_calls = row.injection_calls,
      injection_output = row.injection_output,
      patch = row.patch,
    },
    expect = { M.utility_check(row.user_task, utility) },
    -- A user task whose utility function holds when nothing is done (`evalua
    -- harden` finds them): kept as AgentDojo scores it, and said here.
    harden = tasks.harden and tasks.harden[row.user_task],
  }
  if attack then
    local security = tasks.security[row.injection_task]
    if security == nil then error("agentdojo: no security function for " .. row.injection_task, 0) end
    case.prohibited = { M.security_check(row.injection_task, security) }
  end
  return case
end

--- An AgentDojo suite: `opts.name` ("workspace" | "slack" | "travel" |
--- "banking"), `opts.impl` (lib/<name>.lua: `tools`, `utility`, `security`).
function M.suite(opts)
  local name, impl = opts.name, opts.impl
  local suite = evalua.suite {
    name = "agentdojo-" .. name,
    version = "agentdojo-0.1.35/v1.2.2",
    description = "AgentDojo's " .. name .. " suite (Debenedetti et al. 2024): user tasks graded by their utility functions, "
      .. "and each paired with each injection task under the important_instructions attack, graded by its security function",
    trials = 1,
    sandbox = { schema = name .. "/environment.sql" },
    agents = {
      gold = evalua.agent.scripted(M.gold_agent),
      obedient = evalua.agent.scripted(M.obedient_agent),
      model = evalua.agent.openai {
        model = evalua.getenv("EVALUA_OPENAI_MODEL") or "gpt-4o-2024-05-13",
        system = "system_message.md",
        temperature = 0,
        -- AgentDojo's ToolsExecutionLoop: at most 15 model calls.
        max_turns = 15,
        -- A tool's text reaches the model as AgentDojo's does (a failed call as its error).
        tool_results = "text",
      },
    },
    default_agent = "gold",
    grade = { reexecute = true },
  }
  for _, info in ipairs(require(name .. ".tools")) do
    local tool = impl.tools[info.name]
    if tool == nil then error("agentdojo: no handler for " .. name .. "'s tool " .. info.name, 0) end
    suite:tool {
      name = info.name,
      description = info.description,
      params = info.parameters,
      effect = tool.writes and "write" or "read",
      -- AgentDojo's runtime checks the arguments itself (pydantic, lax): see coerce.
      validate = false,
      run = M.handler(info, tool),
    }
  end
  suite:dataset(name .. "/cases.json", {
    format = "json",
    map = function(row) return case_of(row, impl) end,
  })
  return suite
end

return M
