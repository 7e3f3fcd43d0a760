-- AgentDojo's travel suite (agentdojo 0.1.35, benchmark v1.2.2; MIT: ../LICENSE), ported:
-- the tools (lib/travel_tools.lua: hotels, restaurants, car rental, reservations,
-- flights, user; lib/travel_mail.lua: calendar and email), the utility and
-- security functions (lib/travel_tasks.lua) and the Python semantics and
-- environment comparisons they share (lib/travel_py.lua, lib/travel_diff.lua).
local P = require("lib.travel_py")
local tasks = require("lib.travel_tasks")

local M = { tools = {}, utility = tasks.utility, security = tasks.security }

local params = {}
for _, info in ipairs(require("travel.tools")) do params[info.name] = info.parameters end

-- Each tool validates its arguments first, as AgentDojo's runtime does with pydantic.
for _, part in ipairs({ require("lib.travel_tools"), require("lib.travel_mail") }) do
  for name, tool in pairs(part) do
    M.tools[name] = {
      writes = tool.writes,
      run = function(env, args, ctx)
        P.validate(name, params[name], args)
        return tool.run(env, args, ctx)
      end,
    }
  end
end
return M
