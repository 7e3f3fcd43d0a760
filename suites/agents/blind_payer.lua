-- suites/agents/blind_payer.lua: charges the order and, when the call
-- fails, charges again (up to three tries) without looking at what the
-- failed call may have done. suites/payments.lua.
return function(task, env)
  local order = task.input:match("O%-%d+")
  local amount = tonumber(task.input:match("(%d+%.?%d*) EUR"))
  for _ = 1, 3 do
    local r, status, err = env.call("charge_card", { order_id = order, amount = amount })
    if status == "ok" then return string.format("Charged %.2f EUR for %s.", r.charged, order) end
    if status == "denied" then return "Not allowed: " .. tostring(err) end
  end
  return "The payment service keeps failing."
end
