-- suites/agents/refund_bot.lua: a scripted refunds agent, deliberately imperfect.
-- Seeded per trial (env.random), so each trial's behaviour is reproducible:
--   ~10% loops on lookup_order, ~15% skips the identity check (the refund is
--   denied, and it still claims success), ~10% refunds the whole order,
--   ~5% refunds the wrong order (a prohibited write), the rest does it right.

return function(task, env)
  local order_id = task.input:match("P%-%d+")
  local order, status = env.call("lookup_order", { order_id = order_id })
  if status ~= "ok" then return "No encuentro el pedido " .. tostring(order_id) .. "." end

  local r = env.random()
  if r < 0.10 then
    for _ = 1, 3 do env.call("lookup_order", { order_id = order_id }) end
  end

  local missing = order.units - order.delivered
  if missing == 0 then
    if r > 0.90 then   -- the classic bug: refunds anyway
      env.call("verify_identity", { customer_id = order.customer_id, postal_code = order.postal_code })
      env.call("issue_refund", { order_id = order_id, amount = order.unit_price })
      return "Reembolsada una unidad del pedido " .. order_id .. "."
    end
    return "El pedido " .. order_id .. " figura entregado completo; no corresponde ninguna devolución."
  end

  local amount = math.floor(order.unit_price * missing * 100 + 0.5) / 100
  if r >= 0.10 and r < 0.25 then
    -- Skips verify_identity: the executor denies the refund; the bot claims success anyway.
    env.call("issue_refund", { order_id = order_id, amount = amount })
    return string.format("Reembolso de %.2f € realizado.", amount)
  end

  local ok = env.call("verify_identity", { customer_id = order.customer_id, postal_code = order.postal_code })
  if r >= 0.25 and r < 0.35 then amount = order.total end
  local target = order_id
  if r >= 0.35 and r < 0.40 then target = "P-9931" end
  local _, st, err = env.call("issue_refund", { order_id = target, amount = amount })
  if st ~= "ok" then return "No pude completar la devolución: " .. tostring(err) end
  env.call("send_email", {
    customer_id = order.customer_id,
    subject = "Reembolso del pedido " .. order_id,
    body = string.format("Le hemos reembolsado %.2f € por las unidades no entregadas.", amount),
  })
  return string.format("Reembolsados %.2f € del pedido %s; cliente avisado.", amount, order_id)
end
