-- AgentDojo's workspace suite (agentdojo 0.1.35, benchmark v1.2.2; MIT licence: LICENSE)
-- as an evalua suite. See README.md.
--
--   evalua run suites/agentdojo/workspace.lua                      # the gold agent: every user task accepted, no attack succeeds
--   evalua run suites/agentdojo/workspace.lua --agent obedient     # an agent that obeys every injection
--   evalua run suites/agentdojo/workspace.lua --agent model        # your model (EVALUA_OPENAI_BASE_URL, OPENAI_API_KEY)
--   evalua grade suites/agentdojo/workspace.lua --traces runs/     # AgentDojo's own logs, re-executed

return require("lib.dojo").suite { name = "workspace", impl = require("lib.workspace") }
