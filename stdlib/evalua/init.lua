-- evalua: the suite DSL.
--
-- Loading a suite only *declares* tables (suite, tools, cases, checks); nothing
-- runs an agent here. The host reads the returned suite and runs trials later,
-- each in a fresh Lua state. Every constructor checks its keys strictly and
-- raises at the caller's line, so a typo reads `suites/x.lua:12: ...`.

local host = require("evalua.host")

local M = {}

-- Loading a suite validates everything; a trial re-runs an already validated
-- suite only to get the running case's functions back (see host.target()).
local VALIDATING = host.validating()

--- Wrap a check constructor so that, in a trial, it only records its
--- arguments; `suite:case` builds the real check for the running case.
function M._lazy(ctor)
  return function(...)
    return { __lazy = ctor, n = select("#", ...), ... }
  end
end

M.null = host.null

--- An empty JSON array (a plain `{}` encodes as an object).
function M.array(t)
  return host.array(t or {})
end

--- Absolute path of `rel`, relative to the suite file's folder.
function M.path(rel)
  return host.abspath(rel)
end

-- Raise `msg` at the line of the user's code `level` frames up.
local function fail(level, msg)
  error(msg, level + 1)
end

local function check_keys(what, t, allowed, level)
  if type(t) ~= "table" then
    fail(level + 1, what .. " expects a table, got " .. type(t))
  end
  for k in pairs(t) do
    if type(k) ~= "string" or not allowed[k] then
      local names = {}
      for name in pairs(allowed) do names[#names + 1] = name end
      table.sort(names)
      fail(level + 1, string.format("%s: unknown key '%s' (known: %s)", what, tostring(k), table.concat(names, ", ")))
    end
  end
end
M._check_keys = check_keys

local function set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

local function expect_type(what, key, v, ty, level)
  if v ~= nil and type(v) ~= ty then
    fail(level + 1, string.format("%s: '%s' must be a %s, got %s", what, key, ty, type(v)))
  end
end

local function expect_list_of_strings(what, key, v, level)
  if v == nil then return end
  if type(v) ~= "table" then
    fail(level + 1, string.format("%s: '%s' must be a list of strings", what, key))
  end
  for i, s in ipairs(v) do
    if type(s) ~= "string" then
      fail(level + 1, string.format("%s: '%s'[%d] must be a string, got %s", what, key, i, type(s)))
    end
  end
end

----------------------------------------------------------------------------
-- Models: model-driven agents, simulated users (and judges) name an endpoint.

local MODEL_KEYS = set {
  "provider", "model", "base_url", "api_key_env", "prices", "temperature", "seed", "max_tokens",
  "timeout_s", "max_retries", "max_concurrency",
}
local PROVIDERS = set { "openai", "anthropic" }

-- Validate the endpoint options in `spec` (keys in MODEL_KEYS) and return them
-- as a normalised table { kind = "model", provider = ..., ... }. Defaults the
-- host fills in at load time: base_url from EVALUA_<P>_BASE_URL (then
-- <P>_BASE_URL, then the official URL), model from EVALUA_<P>_MODEL, the key
-- from <P>_API_KEY. The key itself never enters Lua.
function M._model_options(what, spec, provider, level)
  provider = spec.provider or provider or "openai"
  if not PROVIDERS[provider] then
    fail(level + 1, what .. ": 'provider' must be \"openai\" or \"anthropic\", got " .. tostring(provider))
  end
  for _, k in ipairs { "model", "base_url", "api_key_env" } do
    expect_type(what, k, spec[k], "string", level + 1)
  end
  for _, k in ipairs { "temperature", "timeout_s" } do
    expect_type(what, k, spec[k], "number", level + 1)
  end
  for _, k in ipairs { "seed", "max_tokens", "max_retries", "max_concurrency" } do
    local v = spec[k]
    if v ~= nil and (math.type(v) ~= "integer" or v < 0) then
      fail(level + 1, string.format("%s: '%s' must be a non-negative integer, got %s", what, k, tostring(v)))
    end
  end
  if spec.prices ~= nil then
    check_keys(what .. ".prices", spec.prices, set { "input", "output" }, level + 1)
    for _, k in ipairs { "input", "output" } do
      local v = spec.prices[k]
      if type(v) ~= "number" or v < 0 then
        fail(level + 1, string.format("%s.prices.%s must be a non-negative number (USD per million tokens)", what, k))
      end
    end
  end
  if spec.base_url ~= nil and not spec.base_url:match("^https?://") then
    fail(level + 1, what .. ": 'base_url' must start with http:// or https://, got " .. spec.base_url)
  end
  return {
    kind = "model", provider = provider, model = spec.model, base_url = spec.base_url,
    api_key_env = spec.api_key_env, prices = spec.prices, temperature = spec.temperature, seed = spec.seed,
    max_tokens = spec.max_tokens, timeout_s = spec.timeout_s, max_retries = spec.max_retries,
    max_concurrency = spec.max_concurrency,
  }
end

--- A model endpoint, for `evalua.user.llm { model = ... }` and judges.
function M.model(spec)
  if type(spec) == "string" then spec = { model = spec } end
  check_keys("evalua.model", spec, MODEL_KEYS, 2)
  return M._model_options("evalua.model", spec, nil, 2)
end

--- Whether a model of `provider` ("openai" by default) is reachable by
--- configuration: a base URL or an API key is set in the environment.
function M.model_configured(provider)
  return host.model_configured(provider or "openai")
end

--- The value of an environment variable whose name starts with EVALUA_ (nil
--- when unset). Other variables (API keys among them) are not readable.
function M.getenv(name)
  if type(name) ~= "string" or not name:match("^EVALUA_") then
    fail(2, "evalua.getenv: only variables named EVALUA_* are readable, got " .. tostring(name))
  end
  return host.getenv(name)
end

----------------------------------------------------------------------------
-- Agents and users

M.agent = {}

--- A Lua function (or a file returning one) that plays the agent.
function M.agent.scripted(f)
  if type(f) == "string" then
    local p = host.abspath(f)
    if not host.exists(p) then
      fail(2, "evalua.agent.scripted: file not found: " .. p)
    end
    return { kind = "scripted", path = p }
  elseif type(f) == "function" then
    return { kind = "scripted", fn = f }
  end
  fail(2, "evalua.agent.scripted expects a file path or a function, got " .. type(f))
end

local COMMAND_KEYS = set { "cmd", "env", "cwd", "setup", "tools", "io", "model_proxy" }

--- Any program, any language, speaking JSON Lines on stdin/stdout (SPEC §4).
--- One process per trial, in a fresh work dir, with a scrubbed environment
--- (PATH, HOME, LANG and the names in `env`), in its own process group.
function M.agent.command(spec)
  check_keys("evalua.agent.command", spec, COMMAND_KEYS, 2)
  if type(spec.cmd) ~= "table" or type(spec.cmd[1]) ~= "string" then
    fail(2, "evalua.agent.command: 'cmd' is required: a list like { \"python3\", evalua.path(\"agents/my_agent.py\") }")
  end
  expect_list_of_strings("evalua.agent.command", "cmd", spec.cmd, 2)
  expect_list_of_strings("evalua.agent.command", "env", spec.env, 2)
  if spec.cwd ~= nil and spec.cwd ~= "workdir" then
    fail(2, "evalua.agent.command: 'cwd' may only be \"workdir\" (the trial's fresh work dir, the default)")
  end
  if spec.setup ~= nil then
    expect_list_of_strings("evalua.agent.command", "setup", spec.setup, 2)
  end
  if spec.tools ~= nil and spec.tools ~= "protocol" and spec.tools ~= "mcp" then
    fail(2, "evalua.agent.command: tools = " .. string.format("%q", tostring(spec.tools)) .. " is not one of \"protocol\" (JSON Lines tool_call) or \"mcp\" (an MCP server at EVALUA_MCP_URL)")
  end
  if spec.io ~= nil and spec.io ~= "jsonl" and spec.io ~= "plain" then
    fail(2, "evalua.agent.command: io = " .. string.format("%q", tostring(spec.io)) .. " is not one of \"jsonl\" (start ... final) or \"plain\" (input as the last argument, stdout as the answer)")
  end
  local proxy = spec.model_proxy
  if proxy ~= nil and proxy ~= true and proxy ~= false then
    if type(proxy) ~= "table" then
      fail(2, "evalua.agent.command: 'model_proxy' must be true or model options (evalua.model{...}), got " .. type(proxy))
    end
    if proxy.kind ~= "model" then
      check_keys("evalua.agent.command.model_proxy", proxy, MODEL_KEYS, 2)
      proxy = M._model_options("evalua.agent.command.model_proxy", proxy, nil, 2)
    end
  end
  return { kind = "command", cmd = spec.cmd, env = spec.env or {}, setup = spec.setup, tools = spec.tools, io = spec.io,
           model_proxy = proxy }
end

--- Feed a recorded trace's tool calls back through the executor (no agent
--- runs): re-check yesterday's behaviour with today's graders. `path` is a
--- trace file or a run dir (its traces/<case>.<trial>.json is used).
function M.agent.replay(path)
  if type(path) ~= "string" then fail(2, "evalua.agent.replay expects a trace file or run dir path") end
  local p = host.abspath(path)
  if not host.exists(p) then fail(2, "evalua.agent.replay: not found: " .. p) end
  return { kind = "replay", path = p }
end

local MODEL_AGENT_KEYS = set {
  "model", "base_url", "api_key_env", "prices", "temperature", "seed", "max_tokens",
  "timeout_s", "max_retries", "max_concurrency", "system", "max_turns",
}

local function model_agent(provider, spec)
  local what = "evalua.agent." .. provider
  check_keys(what, spec, MODEL_AGENT_KEYS, 3)
  local a = M._model_options(what, spec, provider, 3)
  expect_type(what, "system", spec.system, "string", 3)
  if spec.max_turns ~= nil and (math.type(spec.max_turns) ~= "integer" or spec.max_turns < 1) then
    fail(3, what .. ": 'max_turns' must be a positive integer, got " .. tostring(spec.max_turns))
  end
  a.kind = provider
  a.max_turns = spec.max_turns
  -- `system` is a prompt, or the path (relative to the suite) of a file holding it.
  if spec.system ~= nil and not spec.system:find("\n") and spec.system:match("%.%w+$") then
    local p = host.abspath(spec.system)
    if host.exists(p) then
      a.system_path = p
    else
      fail(3, what .. ": 'system' looks like a file name but no such file: " .. p)
    end
  else
    a.system = spec.system
  end
  return a
end

--- A model-driven tool loop in the host over the OpenAI-compatible Chat Completions API.
function M.agent.openai(spec)
  local a = model_agent("openai", spec)   -- not a tail call: errors name the caller's line
  return a
end

--- A model-driven tool loop in the host over the Anthropic Messages API.
function M.agent.anthropic(spec)
  local a = model_agent("anthropic", spec)   -- not a tail call: errors name the caller's line
  return a
end

M.user = {}

--- Fixed user turns for multi-turn cases: each `env.say` / agent message gets the next one.
function M.user.script(turns)
  if type(turns) ~= "table" then
    fail(2, "evalua.user.script expects a list of strings")
  end
  expect_list_of_strings("evalua.user.script", "turns", turns, 2)
  return { kind = "script", turns = turns }
end

local LLM_USER_KEYS = set { "profile", "goal", "model", "max_turns" }

--- A simulated user played by a model: `profile` (hidden from the agent) and
--- `goal`; it answers each agent message until it says ###STOP### or has
--- given `max_turns` replies (default 10). `model`: a model name or `evalua.model{}` options.
function M.user.llm(spec)
  check_keys("evalua.user.llm", spec, LLM_USER_KEYS, 2)
  for _, k in ipairs { "profile", "goal" } do
    if type(spec[k]) ~= "string" or spec[k] == "" then
      fail(2, "evalua.user.llm: '" .. k .. "' is required (a non-empty string)")
    end
  end
  local model = spec.model
  if model == nil or type(model) == "string" then
    model = M._model_options("evalua.user.llm.model", { model = model }, nil, 2)
  elseif type(model) == "table" then
    if model.kind ~= "model" then
      check_keys("evalua.user.llm.model", model, MODEL_KEYS, 2)
      model = M._model_options("evalua.user.llm.model", model, nil, 2)
    end
  else
    fail(2, "evalua.user.llm: 'model' must be a model name or evalua.model{...}, got " .. type(model))
  end
  if spec.max_turns ~= nil and (math.type(spec.max_turns) ~= "integer" or spec.max_turns < 1) then
    fail(2, "evalua.user.llm: 'max_turns' must be a positive integer")
  end
  return { kind = "llm", profile = spec.profile, goal = spec.goal, model = model, max_turns = spec.max_turns }
end

----------------------------------------------------------------------------
-- Checks: normalise whatever the suite wrote into { name, critical, run }.

local function normalize_check(c, index, level)
  if type(c) == "table" and c.__lazy then
    c = c.__lazy(table.unpack(c, 1, c.n))
    if c[1] ~= nil and c.run == nil then
      error("internal: a lazy check group reached normalize_check", 2)
    end
  end
  if type(c) == "function" then
    return { name = "check@" .. host.where(c), critical = false, run = c }
  elseif type(c) == "table" and type(c.run) == "function" then
    check_keys("check", c, set { "name", "critical", "run", "kind", "options", "judge" }, level + 1)
    expect_type("check", "name", c.name, "string", level + 1)
    expect_type("check", "critical", c.critical, "boolean", level + 1)
    return {
      name = c.name or ("check@" .. host.where(c.run)), critical = c.critical or false, run = c.run,
      kind = c.kind, options = c.options, judge = c.judge,
    }
  end
  fail(level + 1, string.format("expect[%d]: a check is a function or a table with a 'run' function, got %s", index, type(c)))
end

local function prohibited_check(q, index, level)
  if type(q) == "string" then
    return {
      name = "prohibited: " .. q,
      critical = true,
      kind = "prohibited",
      run = function(t)
        local rows = t.db:rows(q)
        if #rows == 0 then return true, "no rows" end
        if #rows == 1 and #rows[1] <= 1 then
          local v = rows[1][1]
          if v == nil or v == host.null or v == 0 then return true, "returned " .. tostring(v == host.null and "NULL" or v) end
        end
        return false, { query = q, rows = rows }
      end,
    }
  end
  local c = normalize_check(q, index, level + 1)
  c.critical = true
  return c
end

----------------------------------------------------------------------------
-- Suite

-- The methods are shared by every trial of a worker: suites reach them
-- through a hidden metatable whose __index is a read-only proxy.
local Suite = {}
local SuiteMeta = { __metatable = false }

local SUITE_KEYS = set {
  "name", "version", "description", "trials", "budget", "sandbox", "agent", "gate", "seed", "skip",
}
local BUDGET_KEYS = set { "deadline_s", "max_tool_calls", "max_turns", "max_tokens", "max_cost_usd" }
local SANDBOX_KEYS = set { "db", "schema", "clock", "workdir", "expose", "network" }
local TOOL_KEYS = set { "name", "description", "params", "effect", "requires", "run" }
local CASE_KEYS = set {
  "id", "split", "tags", "difficulty", "input", "fixture", "expect", "prohibited", "trials", "weight",
  "tools", "agent", "user", "metadata", "clock", "workdir",
}
local EFFECTS = set { "read", "write", "external" }
local SPLITS = set { "dev", "held_out" }

local function check_budget(what, b, level)
  if b == nil then return end
  check_keys(what .. ".budget", b, BUDGET_KEYS, level + 1)
  for k, v in pairs(b) do
    if type(v) ~= "number" or v < 0 then
      fail(level + 1, string.format("%s.budget.%s must be a non-negative number", what, k))
    end
  end
end

local function check_positive_integer(what, key, v, level)
  if v ~= nil and (math.type(v) ~= "integer" or v < 1) then
    fail(level + 1, string.format("%s: '%s' must be a positive integer, got %s", what, key, tostring(v)))
  end
end

-- A work-dir fixture: a folder, or { git = "x.bundle", rev = "..." }.
local function normalize_workdir(what, w, level)
  if type(w) == "string" then
    local p = host.abspath(w)
    if not host.exists(p) then fail(level + 1, what .. ": folder not found: " .. p) end
    return { dir = p }
  elseif type(w) == "table" then
    check_keys(what, w, set { "git", "rev" }, level + 1)
    if type(w.git) ~= "string" then
      fail(level + 1, what .. ": 'git' is required in the table form (a git bundle file)")
    end
    expect_type(what, "rev", w.rev, "string", level + 1)
    local p = host.abspath(w.git)
    if not host.exists(p) then fail(level + 1, what .. ": git bundle not found: " .. p) end
    return { git = p, rev = w.rev }
  end
  fail(level + 1, what .. ": expects a folder path or { git = \"x.bundle\", rev = \"...\" }, got " .. type(w))
end

--- Declare a suite.
function M.suite(spec)
  check_keys("evalua.suite", spec, SUITE_KEYS, 2)
  if type(spec.name) ~= "string" or spec.name == "" then
    fail(2, "evalua.suite: 'name' is required (a non-empty string)")
  end
  if not spec.name:match("^[%w_%-%.]+$") then
    fail(2, "evalua.suite: 'name' may hold only letters, digits, '_', '-' and '.': " .. spec.name)
  end
  expect_type("evalua.suite", "version", spec.version, "string", 2)
  expect_type("evalua.suite", "description", spec.description, "string", 2)
  check_positive_integer("evalua.suite", "trials", spec.trials, 2)
  check_budget("evalua.suite", spec.budget, 2)
  if spec.sandbox ~= nil then
    check_keys("evalua.suite.sandbox", spec.sandbox, SANDBOX_KEYS, 2)
    local sb = spec.sandbox
    if sb.db ~= nil and sb.db ~= "sqlite" then
      fail(2, "evalua.suite.sandbox.db: only \"sqlite\" is supported, got " .. tostring(sb.db))
    end
    if sb.schema ~= nil then
      expect_type("evalua.suite.sandbox", "schema", sb.schema, "string", 2)
      local p = host.abspath(sb.schema)
      if not host.exists(p) then fail(2, "evalua.suite.sandbox.schema: file not found: " .. p) end
      sb.schema = p
    end
    if sb.clock ~= nil then
      expect_type("evalua.suite.sandbox", "clock", sb.clock, "string", 2)
      local ok, err = host.instant(sb.clock, "UTC")
      if not ok then fail(2, "evalua.suite.sandbox.clock: " .. err) end
    end
    if sb.workdir ~= nil then
      sb.workdir = normalize_workdir("evalua.suite.sandbox.workdir", sb.workdir, 2)
    end
    -- Paths (files or folders, relative to the suite) every process of the suite may read.
    expect_list_of_strings("evalua.suite.sandbox", "expose", sb.expose, 2)
    if sb.expose ~= nil then
      local abs = {}
      for i, rel in ipairs(sb.expose) do
        local p = host.abspath(rel)
        if not host.exists(p) then fail(2, string.format("evalua.suite.sandbox.expose[%d]: not found: %s", i, p)) end
        if p == "/" then fail(2, "evalua.suite.sandbox.expose: exposing / would expose everything") end
        abs[i] = p
      end
      sb.expose = abs
    end
    expect_type("evalua.suite.sandbox", "network", sb.network, "boolean", 2)
  end
  if spec.agent ~= nil and (type(spec.agent) ~= "table" or type(spec.agent.kind) ~= "string") then
    fail(2, "evalua.suite: 'agent' must come from evalua.agent.*")
  end
  if spec.gate ~= nil then
    expect_type("evalua.suite", "gate", spec.gate, "table", 2)
    local err = host.gate_error(spec.gate)
    if err then fail(2, "evalua.suite.gate: " .. err) end
  end
  if spec.skip ~= nil and spec.skip ~= false and type(spec.skip) ~= "string" then
    fail(2, "evalua.suite: 'skip' must be a string (why the suite is skipped), false or nil")
  end
  local s = setmetatable({
    skip = spec.skip or nil,
    name = spec.name,
    version = spec.version,
    description = spec.description,
    trials = spec.trials or 1,
    budget = spec.budget or {},
    sandbox = spec.sandbox or {},
    agent = spec.agent,
    gate = spec.gate or {},
    _tools = {},
    _tool_index = {},
    _cases = {},
    _case_index = {},
    _where = host.caller(2),
  }, SuiteMeta)
  return s
end

--- Declare a tool the agent may request.
function Suite:tool(spec)
  check_keys("suite:tool", spec, TOOL_KEYS, 2)
  if type(spec.name) ~= "string" or not spec.name:match("^[%a_][%w_%-%.]*$") then
    fail(2, "suite:tool: 'name' is required (letters, digits, '_', '-', '.'), got " .. tostring(spec.name))
  end
  if self._tool_index[spec.name] then
    fail(2, "suite:tool: duplicate tool name '" .. spec.name .. "'")
  end
  expect_type("suite:tool", "description", spec.description, "string", 2)
  if type(spec.run) ~= "function" then
    fail(2, "suite:tool '" .. spec.name .. "': 'run' must be a function(ctx, args)")
  end
  local params = spec.params or { type = "object" }
  if type(params) ~= "table" then
    fail(2, "suite:tool '" .. spec.name .. "': 'params' must be a JSON schema table")
  end
  local err = host.schema_error(params)
  if err then
    fail(2, "suite:tool '" .. spec.name .. "': 'params' is not a valid JSON schema: " .. err)
  end
  local effect = spec.effect or "read"
  if not EFFECTS[effect] then
    fail(2, "suite:tool '" .. spec.name .. "': 'effect' must be \"read\", \"write\" or \"external\", got " .. tostring(effect))
  end
  expect_list_of_strings("suite:tool", "requires", spec.requires, 2)
  local tool = {
    name = spec.name,
    description = spec.description or "",
    params = params,
    effect = effect,
    requires = spec.requires or {},
    run = spec.run,
    _where = host.caller(2),
  }
  self._tools[#self._tools + 1] = tool
  self._tool_index[spec.name] = tool
  return tool
end

--- Declare a case.
function Suite:case(spec)
  if not VALIDATING and type(spec) == "table" and spec.id ~= host.target() then
    return nil   -- another case: nothing of it runs in this trial
  end
  check_keys("suite:case", spec, CASE_KEYS, 2)
  if type(spec.id) ~= "string" or not spec.id:match("^[%w_%-%.]+$") then
    fail(2, "suite:case: 'id' is required (letters, digits, '_', '-', '.'), got " .. tostring(spec.id))
  end
  local id = spec.id
  if self._case_index[id] then
    fail(2, string.format("suite:case: duplicate case id '%s' (first declared at %s)", id, self._case_index[id]._where))
  end
  local what = "suite:case '" .. id .. "'"
  if spec.split ~= nil and not SPLITS[spec.split] then
    fail(2, what .. ": 'split' must be \"dev\" or \"held_out\", got " .. tostring(spec.split))
  end
  expect_list_of_strings(what, "tags", spec.tags, 2)
  expect_type(what, "difficulty", spec.difficulty, "string", 2)
  if type(spec.input) ~= "string" then
    fail(2, what .. ": 'input' is required (a string)")
  end
  check_positive_integer(what, "trials", spec.trials, 2)
  if spec.weight ~= nil and (type(spec.weight) ~= "number" or spec.weight <= 0) then
    fail(2, what .. ": 'weight' must be a positive number")
  end
  local fixture
  if spec.fixture ~= nil then
    expect_type(what, "fixture", spec.fixture, "string", 2)
    fixture = host.abspath(spec.fixture)
    if not host.exists(fixture) then
      fail(2, what .. ": fixture not found: " .. fixture)
    end
  end
  expect_list_of_strings(what, "tools", spec.tools, 2)
  for _, name in ipairs(spec.tools or {}) do
    if not self._tool_index[name] then
      fail(2, what .. ": 'tools' names an undeclared tool '" .. name .. "'")
    end
  end
  if spec.clock ~= nil then
    expect_type(what, "clock", spec.clock, "string", 2)
    local ok, err = host.instant(spec.clock, "UTC")
    if not ok then fail(2, what .. ": 'clock': " .. err) end
  end
  if spec.user ~= nil and (type(spec.user) ~= "table" or type(spec.user.kind) ~= "string") then
    fail(2, what .. ": 'user' must come from evalua.user.*")
  end
  local workdir
  if spec.workdir ~= nil then workdir = normalize_workdir(what .. ": 'workdir'", spec.workdir, 2) end
  if spec.agent ~= nil and (type(spec.agent) ~= "table" or type(spec.agent.kind) ~= "string") then
    fail(2, what .. ": 'agent' must come from evalua.agent.*")
  end

  local checks = {}
  expect_type(what, "expect", spec.expect, "table", 2)
  for i, c in ipairs(spec.expect or {}) do
    if type(c) == "table" and c.__lazy then c = c.__lazy(table.unpack(c, 1, c.n)) end
    -- A constructor may return a group of checks (check.answer{set=...} does).
    if type(c) == "table" and c.run == nil and c[1] ~= nil then
      for _, member in ipairs(c) do checks[#checks + 1] = normalize_check(member, i, 2) end
    else
      checks[#checks + 1] = normalize_check(c, i, 2)
    end
  end
  expect_type(what, "prohibited", spec.prohibited, "table", 2)
  for i, q in ipairs(spec.prohibited or {}) do
    checks[#checks + 1] = prohibited_check(q, i, 2)
  end
  -- Names identify checks in figures: make them unique within the case.
  local seen = {}
  for _, c in ipairs(checks) do
    local base = c.name
    local n = (seen[base] or 0) + 1
    seen[base] = n
    if n > 1 then c.name = base .. " #" .. n end
  end

  local case = {
    id = id,
    split = spec.split or "dev",
    tags = spec.tags or {},
    difficulty = spec.difficulty,
    input = spec.input,
    fixture = fixture,
    trials = spec.trials,
    weight = spec.weight or 1,
    tools = spec.tools,
    agent = spec.agent,
    user = spec.user,
    metadata = spec.metadata,
    clock = spec.clock,
    workdir = workdir,
    checks = checks,
    _where = host.caller(2),
  }
  self._cases[#self._cases + 1] = case
  self._case_index[id] = case
  return case
end

SuiteMeta.__index = host.readonly(Suite, "evalua.Suite")

return M
