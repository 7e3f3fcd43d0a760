-- graders/tickets_test.lua: examples the graders must get right (`evalua test`).
-- A grader never seen to fail is not known to work: the must-fail example comes first.

local evalua = require("evalua")
local tickets = require("graders.tickets")

local case = { id = "close_resolved_ticket", input = "Ticket T-42 is resolved. Please close it." }

local function close(id, status)
  return { name = "close_ticket", effect = "write", status = status or "executed", args = { ticket_id = id } }
end

return evalua.grader_tests(tickets.closes_only_named, {
  { name = "closes a ticket the request does not name", expect = "fail", case = case,
    calls = { close("T-43") } },
  { name = "closes the named ticket", expect = "pass", case = case, calls = { close("T-42") } },
  { name = "a refused close of another ticket is no close", expect = "pass", case = case,
    calls = { close("T-43", "denied"), close("T-42") } },
  { name = "closes nothing", expect = "pass", case = case },
})
