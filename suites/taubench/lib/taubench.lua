-- τ-bench's domains as evalua suites: one case per task, the database as the
-- sandbox, the tools ported to Lua, and the checks that grade a trial as
-- τ-bench's reward does (see ../README.md).

local evalua = require("evalua")
local check = require("evalua.check")

local M = {}

--- τ-bench's user simulator (tau_bench/envs/user.py, LLMUserSimulationEnv):
--- its system prompt for a task's instruction.
function M.user_prompt(instruction)
  return "You are a user interacting with an agent.\n\nInstruction: " .. instruction .. "\n" .. [[

Rules:
- Just generate one line at a time to simulate the user's message.
- Do not give away all the instruction at once. Only provide the information that is necessary for the current step.
- Do not hallucinate information that is not provided in the instruction. For example, if the agent asks for the order id but it is not mentioned in the instruction, do not make up an order id, just say you do not remember or have it.
- If the instruction goal is satisified, generate '###STOP###' as a standalone message without anything else to end the conversation.
- Do not repeat the exact instruction in the conversation. Instead, use your own words to convey the same information.
- Try to make the conversation as natural as possible, and stick to the personalities in the instruction.]]
end

--- The simulated user's model: EVALUA_USER_MODEL (τ-bench's default gpt-4o),
--- at EVALUA_USER_BASE_URL when set (else where the agent's model is).
function M.user_model()
  return evalua.model {
    model = evalua.getenv("EVALUA_USER_MODEL") or "gpt-4o",
    base_url = evalua.getenv("EVALUA_USER_BASE_URL"),
  }
end

--- The agent's first line, which τ-bench's simulated user answers to open the conversation.
M.GREETING = "Hi! How can I help you today?"

--- τ-bench's step limit (run.py's max_num_steps): model calls per conversation.
M.MAX_STEPS = 30

--- A task's gold actions as calls: { name, args }. τ-bench's reward replays
--- them on a fresh copy of the database.
function M.gold_calls(task)
  local calls = {}
  for _, a in ipairs(task.actions or {}) do
    if a.name ~= "respond" then calls[#calls + 1] = { name = a.name, args = a.kwargs or {} } end
  end
  return calls
end

-- τ-bench's output check: each required output appears, case-insensitively,
-- in some message the agent sent to the user, with commas removed from the
-- message (not from the output).
local function says_outputs(outputs)
  return {
    name = "says the required outputs",
    run = function(t)
      local said = {}
      for _, m in ipairs(t.messages) do
        if m.role == "agent" and type(m.content) == "string" then
          said[#said + 1] = (m.content:lower():gsub(",", ""))
        end
      end
      local missing = {}
      for _, o in ipairs(outputs) do
        local want, found = o:lower(), false
        for _, s in ipairs(said) do
          if s:find(want, 1, true) then
            found = true
            break
          end
        end
        if not found then missing[#missing + 1] = o end
      end
      return #missing == 0, { outputs = outputs, missing = evalua.array(missing) }
    end,
  }
end

--- The case of a task (`tasks_test.json`'s row, or the task a results entry
--- carries): its checks are τ-bench's reward, in three parts.
function M.case(task, id, split, writes, gold_noop)
  local calls = M.gold_calls(task)
  local wrote = false
  for _, c in ipairs(calls) do
    if writes[c.name] then wrote = true end
  end
  local tags = { wrote and "writes" or "no_writes" }
  local expect = {
    -- τ-bench scores only a conversation that ended (the user's ###STOP###,
    -- or a transfer): one cut off by its step limit gets no reward.
    check.ended({ "final" }, { name = "ended before the step limit" }),
    check.same_state(calls, { name = "database as the gold actions leave it" }),
  }
  if #(task.outputs or {}) > 0 then
    tags[#tags + 1] = "outputs"
    expect[#expect + 1] = says_outputs(task.outputs)
  end
  return {
    id = id,
    split = split,
    tags = tags,
    input = task.instruction,
    metadata = { user_id = task.user_id, actions = task.actions, outputs = task.outputs },
    -- τ-bench's user simulator: its system prompt holds the instruction, and
    -- it opens the conversation by answering the agent's greeting (which the
    -- agent never sees); the agent's first message is that answer.
    -- SPEC §19: `evalua harden` finds that changing nothing passes such a task: its gold
    -- actions write nothing and no output is required (or, `gold_noop`, the gold write
    -- leaves the database as it was). τ-bench's reward says so, and refusing
    -- or changing nothing is what its policy asks there. Kept as τ-bench scores it, said here.
    harden = (not wrote and #(task.outputs or {}) == 0) and {
      skip = { "claim", "bystander", "everything", "wrong_args" },
      reason = "τ-bench's reward: the gold actions write nothing and no output is required, so a conversation that changes nothing is rewarded, whatever it attempted (the policy's answer here is to refuse or to change nothing)",
    } or (gold_noop and gold_noop[id]) and {
      skip = { "claim", "bystander", "everything", "wrong_args" },
      reason = "τ-bench's data: " .. gold_noop[id] .. ", so the gold state is the initial one and a conversation that changes nothing is rewarded",
    } or nil,
    user = evalua.user.llm {
      system = M.user_prompt(task.instruction),
      opening = M.GREETING,
      model = M.user_model(),
      max_turns = M.MAX_STEPS,
    },
    expect = expect,
  }
end

--- The `gold` agent: it plays the task's gold actions through the executor,
--- then says the required outputs, as a perfect agent would.
function M.gold_agent(task, env)
  local meta = task.metadata or {}
  for _, a in ipairs(meta.actions or {}) do
    if a.name ~= "respond" then env.call(a.name, a.kwargs or {}) end
  end
  local outputs = meta.outputs or {}
  if #outputs > 0 then return table.concat(outputs, "\n") end
  return "Is there anything else I can help you with?"
end

--- A τ-bench domain as a suite: `opts.domain` ("airline" | "retail"), `opts.tools`
--- (lib/<domain>.lua), `opts.info` (<domain>/tools_info.lua: get_info() of each
--- tool), `opts.datasets` ({ file, split, prefix }) and `opts.gold_noop` (case id →
--- why its gold write changes nothing: `evalua harden`'s adversaries skip it).
function M.suite(opts)
  local domain = opts.domain
  local suite = evalua.suite {
    name = "taubench-" .. domain,
    version = "tau-bench@59a200c",
    description = "τ-bench's " .. domain .. " domain (Yao et al. 2024): a simulated user, a policy, tools on a database; a trial is accepted exactly when τ-bench's reward would be 1",
    trials = 1,
    budget = { deadline_s = 1800 },
    -- The policy's "current time" (2024-05-15 15:00 EST); the tools read no clock.
    sandbox = { schema = domain .. "/db.sql", clock = "2024-05-15T20:00:00Z" },
    agents = {
      gold = evalua.agent.scripted(M.gold_agent),
      model = evalua.agent.openai {
        model = evalua.getenv("EVALUA_OPENAI_MODEL") or "gpt-4o",
        system = domain .. "/policy.md",
        temperature = 0,
        max_turns = M.MAX_STEPS,
        -- τ-bench's tool-calling agent: a tool's string reaches the model as
        -- it is ("Error: <message>" when it raised), and only the first tool
        -- call of a response runs.
        tool_results = "text",
        calls_per_step = 1,
      },
    },
    default_agent = "gold",
    grade = { reexecute = true },
  }
  for _, info in ipairs(opts.info) do
    local run = opts.tools.handlers[info.name]
    if run == nil then error("no handler for τ-bench tool " .. info.name) end
    suite:tool {
      name = info.name,
      description = info.description,
      params = info.parameters,
      effect = opts.tools.writes[info.name] and "write" or "read",
      -- τ-bench validates no arguments: its tools raise their own errors.
      validate = false,
      -- τ-bench's terminate tool: the conversation ends with the call.
      ends = info.name == "transfer_to_human_agents",
      -- A transfer to a person is an intervention (SPEC §22): the reports count them.
      intervention = info.name == "transfer_to_human_agents",
      run = run,
    }
  end
  for _, d in ipairs(opts.datasets) do
    suite:dataset(d.file, {
      format = "json",
      map = function(task, i) return M.case(task, d.prefix .. (i - 1), d.split, opts.tools.writes, opts.gold_noop) end,
    })
  end
  return suite
end

return M
