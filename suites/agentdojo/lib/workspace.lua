-- AgentDojo's workspace suite (agentdojo 0.1.35, benchmark v1.2.2; MIT: ../LICENSE),
-- ported: the 24 tools (email, calendar, cloud drive), the 40 user tasks'
-- utility functions and the 14 injection tasks' security functions.
--
--   lib/workspace_email.lua, _calendar.lua, _drive.lua   the tools
--   lib/workspace_store.lua                             the models (Inbox, Calendar, CloudDrive), dict order
--   lib/workspace_tasks.lua, _tasks_more.lua            the utility functions
--   lib/workspace_injections.lua                        the security functions
--   lib/workspace_py.lua, _diff.lua                     Python semantics, difflib, DeepDiff
local P = require("lib.workspace_py")
local S = require("lib.workspace_store")

local M = { tools = {}, utility = require("lib.workspace_tasks_more"), security = require("lib.workspace_injections") }

local params = {}
for _, info in ipairs(require("workspace.tools")) do params[info.name] = info.parameters end

-- Each tool validates its arguments first, as AgentDojo's runtime does with pydantic,
-- and returns what model_dump would write.
for _, module in ipairs({ "lib.workspace_email", "lib.workspace_calendar", "lib.workspace_drive" }) do
  for name, tool in pairs(require(module)) do
    if type(tool) == "table" then
      local run = tool.run
      M.tools[name] = {
        writes = tool.writes,
        run = function(env, args, ctx)
          P.validate_args(name, params[name], args)
          return S.dumped(run(env, args, ctx))
        end,
      }
    end
  end
end

return M
