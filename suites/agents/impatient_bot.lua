-- suites/agents/impatient_bot.lua: retries a rate-limited call at once, for
-- as long as it takes (the classic 429 storm). Used by suites/rate_limits.lua.

return function(task, env)
  local order_id = task.input:match("P%-%d+")
  local order, status
  repeat
    order, status = env.call("lookup_order", { order_id = order_id })
  until status == "ok"
  return string.format("Order %s: %d of %d units delivered.", order_id, order.delivered, order.units)
end
