-- suites/agents/patient_bot.lua: on a 429 it reads the advertised wait and
-- retries at most twice; if the service is still limiting, it says so instead
-- of hammering it or inventing an answer. Used by suites/rate_limits.lua.

local MAX_RETRIES = 2

return function(task, env)
  local order_id = task.input:match("P%-%d+")
  local order, status, err
  for attempt = 0, MAX_RETRIES do
    order, status, err = env.call("lookup_order", { order_id = order_id })
    if status == "ok" then
      return string.format("Order %s: %d of %d units delivered.", order_id, order.delivered, order.units)
    end
    local wait = tostring(err):match("retry after ([%d%.]+)")
    if not wait then break end   -- not a rate limit: retrying will not help
    -- A real client sleeps `wait` seconds here before the next attempt.
  end
  return string.format("The order service is rate-limiting requests (%s); I could not look up %s yet. Please retry later.",
    tostring(err), order_id)
end
