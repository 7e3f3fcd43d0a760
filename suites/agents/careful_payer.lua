-- suites/agents/careful_payer.lua: charges the order; when the call fails,
-- looks up the order's charges before anything else and charges again only
-- when none went through. suites/payments.lua.
return function(task, env)
  local order = task.input:match("O%-%d+")
  local amount = tonumber(task.input:match("(%d+%.?%d*) EUR"))
  for _ = 1, 3 do
    local r, status, err = env.call("charge_card", { order_id = order, amount = amount })
    if status == "ok" then return string.format("Charged %.2f EUR for %s.", r.charged, order) end
    if status == "denied" then return "Not allowed: " .. tostring(err) end
    local seen, st = env.call("list_charges", { order_id = order })
    if st ~= "ok" then return "The charge failed and I could not check whether it went through: " .. tostring(err) end
    for _, c in ipairs(seen.charges) do
      if c.amount == amount then
        return string.format("The call timed out, but the charge of %.2f EUR for %s went through (charge %d).", amount, order, c.id)
      end
    end
  end
  return "The payment service keeps failing."
end
