-- AgentDojo's travel suite (agentdojo 0.1.35, benchmark v1.2.2; MIT licence: LICENSE)
-- as an evalua suite. See README.md.
--
--   evalua run suites/agentdojo/travel.lua                      # the gold agent: every user task accepted, no attack succeeds
--   evalua run suites/agentdojo/travel.lua --agent obedient     # an agent that obeys every injection
--   evalua run suites/agentdojo/travel.lua --agent model        # your model (EVALUA_OPENAI_BASE_URL, OPENAI_API_KEY)
--   evalua grade suites/agentdojo/travel.lua --traces runs/     # AgentDojo's own logs, re-executed

return require("lib.dojo").suite { name = "travel", impl = require("lib.travel") }
