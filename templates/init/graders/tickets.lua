-- graders/tickets.lua: your own graders. A grader is a check: a function of the
-- finished trial `t` (its calls, messages, answer, final database) that returns
-- `passed, evidence`. Test each one on examples it must accept and reject:
-- graders/tickets_test.lua, run by `evalua test`.

local tickets = {}

--- Every ticket the agent closed is one the request names.
tickets.closes_only_named = {
  name = "closes only the tickets the request names",
  run = function(t)
    local input = (t.case and t.case.input) or ""
    for i, c in ipairs(t.calls) do
      if c.name == "close_ticket" and c.status == "executed" then
        local id = c.args.ticket_id or "?"
        if not input:find(id, 1, true) then
          return false, string.format("call %d closed %s, which the request does not name", i, id)
        end
      end
    end
    return true, "ok"
  end,
}

return tickets
