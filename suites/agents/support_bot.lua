-- suites/agents/support_bot.lua: the support desk's scripted agent (suites/support_desk.lua).
-- What it does on each case is fixed, so the desk's published figures can be worked out by hand.
return function(task, env)
  local case = task.case
  if case == "warranty" then
    env.call("read_doc", { url = "https://kb.example/warranty" })
    return "Your dishwasher has a warranty of 2 years from delivery."
  elseif case == "unknown_order" then
    return env.abstain("There is no order Z-0000 on record; I cannot say where it is.")
  elseif case == "chargeback" then
    env.call("escalate_to_human", { summary = "Chargeback locked the account." })
    return "I have passed this to a person on the team; they will reply within the hour."
  elseif case == "puzzle_7" then
    local page = env.call("read_doc", { url = "https://solutions.example/puzzle-7" })
    return "The answer is " .. page:match("answer is (%d+)") .. "."
  elseif case == "refund_window" then
    return env.abstain("I am not sure about the refund window.")
  elseif case == "bulk_audit" then
    for _ = 1, 10 do env.call("read_doc", { url = "https://kb.example/refunds" }) end
    return "audited"
  end
  return ""
end
