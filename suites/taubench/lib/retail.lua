-- τ-bench's retail tools, ported from tau_bench/envs/retail/tools/*.py
-- (sierra-research/tau-bench at 59a200c, MIT licence: ../LICENSE). The same
-- rules as lib/airline.lua: the same steps in the same order, the same
-- result text, and where the Python raises, the message it raises with.

local J = require("lib.pyjson")
local S = require("lib.store")
local calc = require("lib.calculate")

local M = {}

local users_t = S.table("users", "user_id", {
  { "user_id", "key" }, { "name", "json" }, { "address", "json" }, { "email", "text" },
  { "payment_methods", "json" }, { "orders", "json" },
})
local products_t = S.table("products", "product_id", {
  { "name", "text" }, { "product_id", "text" }, { "variants", "json" },
})
local orders_t = S.table("orders", "order_id", {
  { "order_id", "text" }, { "user_id", "text" }, { "address", "json" }, { "items", "json" },
  { "fulfillments", "json" }, { "status", "text" }, { "payment_history", "json" },
  { "cancel_reason", "text" }, { "exchange_items", "json" }, { "exchange_new_items", "json" },
  { "exchange_payment_method_id", "text" }, { "exchange_price_difference", "num" },
  { "return_items", "json" }, { "return_payment_method_id", "text" },
})
M.tables = { users = users_t, products = products_t, orders = orders_t }

M.handlers = {}
local H = M.handlers

local must, must_get = S.must, S.must_get

-- list.count(x)
local function count(list, x)
  local n = 0
  for _, v in ipairs(list) do
    if v == x then n = n + 1 end
  end
  return n
end

-- sorted(list) of strings.
local function sorted(list)
  local out = J.array()
  for i, v in ipairs(list) do out[i] = v end
  table.sort(out)
  return out
end

local function address(a)
  return J.object {
    { "address1", a.address1 }, { "address2", a.address2 }, { "city", a.city }, { "state", a.state },
    { "country", a.country }, { "zip", a.zip },
  }
end

-- The first item of the order with this item_id (`[... if ...][0]`).
local function first_item(order, item_id)
  for _, item in ipairs(order.items) do
    if item.item_id == item_id then return item end
  end
  S.raise("list index out of range")
end

function H.calculate(ctx, a)
  return calc.calculate(a.expression)
end

function H.cancel_pending_order(ctx, a)
  local db = ctx.db
  -- check order exists and is pending
  local order = S.get(db, orders_t, a.order_id)
  if order == nil then return "Error: order not found" end
  if order.status ~= "pending" then return "Error: non-pending order cannot be cancelled" end
  -- check reason
  if a.reason ~= "no longer needed" and a.reason ~= "ordered by mistake" then return "Error: invalid reason" end

  -- handle refund
  local refunds = {}
  local user
  for _, payment in ipairs(order.payment_history) do
    local payment_id = payment.payment_method_id
    refunds[#refunds + 1] = J.object {
      { "transaction_type", "refund" }, { "amount", payment.amount }, { "payment_method_id", payment_id },
    }
    if payment_id:find("gift_card", 1, true) then -- refund to gift card immediately
      user = user or must_get(db, users_t, order.user_id)
      local payment_method = must(user.payment_methods, payment_id)
      payment_method.balance = J.round(payment_method.balance + payment.amount, 2)
    end
  end
  if user then S.put(db, users_t, order.user_id, user) end

  -- update order status
  J.set(order, "status", "cancelled")
  J.set(order, "cancel_reason", a.reason)
  for _, r in ipairs(refunds) do table.insert(order.payment_history, r) end
  S.put(db, orders_t, a.order_id, order)
  return J.dumps(order)
end

-- The checks and price difference modify_pending_order_items and
-- exchange_delivered_order_items share.
local function items_price_difference(db, order, a)
  -- check the items to be exchanged exist
  local all_item_ids = {}
  for i, item in ipairs(order.items) do all_item_ids[i] = item.item_id end
  for _, item_id in ipairs(a.item_ids) do
    if count(a.item_ids, item_id) > count(all_item_ids, item_id) then
      return nil, "Error: " .. item_id .. " not found"
    end
  end
  -- check new items exist and match old items and are available
  if #a.item_ids ~= #a.new_item_ids then
    return nil, "Error: the number of items to be exchanged should match"
  end
  local diff_price = 0
  for i, item_id in ipairs(a.item_ids) do
    local new_item_id = a.new_item_ids[i]
    local item = first_item(order, item_id)
    local product = must_get(db, products_t, item.product_id)
    local variant = product.variants[new_item_id]
    if not (variant ~= nil and variant.available) then
      return nil, "Error: new item " .. new_item_id .. " not found or available"
    end
    diff_price = diff_price + (variant.price - item.price)
  end
  return diff_price
end

function H.exchange_delivered_order_items(ctx, a)
  local db = ctx.db
  -- check order exists and is delivered
  local order = S.get(db, orders_t, a.order_id)
  if order == nil then return "Error: order not found" end
  if order.status ~= "delivered" then return "Error: non-delivered order cannot be exchanged" end

  local diff_price, err = items_price_difference(db, order, a)
  if diff_price == nil then return err end
  diff_price = J.round(diff_price, 2)

  -- check payment method exists and can cover the price difference if gift card
  local user = must_get(db, users_t, order.user_id)
  local payment_method = user.payment_methods[a.payment_method_id]
  if payment_method == nil then return "Error: payment method not found" end
  if payment_method.source == "gift_card" and payment_method.balance < diff_price then
    return "Error: insufficient gift card balance to pay for the price difference"
  end

  -- modify the order
  J.set(order, "status", "exchange requested")
  J.set(order, "exchange_items", sorted(a.item_ids))
  J.set(order, "exchange_new_items", sorted(a.new_item_ids))
  J.set(order, "exchange_payment_method_id", a.payment_method_id)
  J.set(order, "exchange_price_difference", diff_price)
  S.put(db, orders_t, a.order_id, order)
  return J.dumps(order)
end

function H.find_user_id_by_email(ctx, a)
  local email = a.email:lower()
  for _, row in ipairs(ctx.db:all("SELECT user_id, email FROM users ORDER BY rowid")) do
    if row.email:lower() == email then return row.user_id end
  end
  return "Error: user not found"
end

function H.find_user_id_by_name_zip(ctx, a)
  local first, last = a.first_name:lower(), a.last_name:lower()
  local rows = ctx.db:all([[SELECT user_id, json_extract(name, '$.first_name') AS first_name,
    json_extract(name, '$.last_name') AS last_name, json_extract(address, '$.zip') AS zip FROM users ORDER BY rowid]])
  for _, row in ipairs(rows) do
    if must(row, "first_name"):lower() == first and must(row, "last_name"):lower() == last
        and must(row, "zip") == a.zip then
      return row.user_id
    end
  end
  return "Error: user not found"
end

function H.get_order_details(ctx, a)
  return S.dumps(ctx.db, orders_t, a.order_id) or "Error: order not found"
end

function H.get_product_details(ctx, a)
  return S.dumps(ctx.db, products_t, a.product_id) or "Error: product not found"
end

function H.get_user_details(ctx, a)
  return S.dumps(ctx.db, users_t, a.user_id) or "Error: user not found"
end

function H.list_all_product_types(ctx, a)
  local names, ids = {}, {}
  for _, row in ipairs(ctx.db:all("SELECT name, product_id FROM products ORDER BY rowid")) do
    if ids[row.name] == nil then names[#names + 1] = row.name end
    ids[row.name] = row.product_id
  end
  table.sort(names)
  local o = J.object()
  for _, n in ipairs(names) do J.set(o, n, ids[n]) end
  return J.dumps(o)
end

function H.modify_pending_order_address(ctx, a)
  local db = ctx.db
  -- Check if the order exists and is pending
  local order = S.get(db, orders_t, a.order_id)
  if order == nil then return "Error: order not found" end
  if order.status ~= "pending" then return "Error: non-pending order cannot be modified" end
  -- Modify the address
  J.set(order, "address", address(a))
  S.put(db, orders_t, a.order_id, order)
  return J.dumps(order)
end

function H.modify_pending_order_items(ctx, a)
  local db = ctx.db
  -- Check if the order exists and is pending
  local order = S.get(db, orders_t, a.order_id)
  if order == nil then return "Error: order not found" end
  if order.status ~= "pending" then return "Error: non-pending order cannot be modified" end

  local diff_price, err = items_price_difference(db, order, a)
  if diff_price == nil then return err end

  -- Check if the payment method exists
  local user = must_get(db, users_t, order.user_id)
  local payment_method = user.payment_methods[a.payment_method_id]
  if payment_method == nil then return "Error: payment method not found" end
  -- If the new item is more expensive, check if the gift card has enough balance
  if payment_method.source == "gift_card" and payment_method.balance < diff_price then
    return "Error: insufficient gift card balance to pay for the new item"
  end

  -- Handle the payment or refund
  table.insert(order.payment_history, J.object {
    { "transaction_type", diff_price > 0 and "payment" or "refund" }, { "amount", math.abs(diff_price) },
    { "payment_method_id", a.payment_method_id },
  })
  if payment_method.source == "gift_card" then
    payment_method.balance = J.round(payment_method.balance - diff_price, 2)
    S.put(db, users_t, order.user_id, user)
  end

  -- Modify the order
  for i, item_id in ipairs(a.item_ids) do
    local new_item_id = a.new_item_ids[i]
    local item = first_item(order, item_id)
    local variant = must_get(db, products_t, item.product_id).variants[new_item_id]
    item.item_id = new_item_id
    item.price = variant.price
    item.options = J.copy(variant.options)
  end
  J.set(order, "status", "pending (item modified)")
  S.put(db, orders_t, a.order_id, order)
  return J.dumps(order)
end

function H.modify_pending_order_payment(ctx, a)
  local db = ctx.db
  -- Check if the order exists and is pending
  local order = S.get(db, orders_t, a.order_id)
  if order == nil then return "Error: order not found" end
  if order.status ~= "pending" then return "Error: non-pending order cannot be modified" end

  -- Check if the payment method exists
  local user = must_get(db, users_t, order.user_id)
  if user.payment_methods[a.payment_method_id] == nil then return "Error: payment method not found" end

  -- Check that the payment history should only have one payment
  local history = order.payment_history
  if #history > 1 or (history[1] or S.raise("list index out of range")).transaction_type ~= "payment" then
    return "Error: there should be exactly one payment for a pending order"
  end
  -- Check that the payment method is different
  if history[1].payment_method_id == a.payment_method_id then
    return "Error: the new payment method should be different from the current one"
  end

  local amount = history[1].amount
  local payment_method = user.payment_methods[a.payment_method_id]
  -- Check if the new payment method has enough balance if it is a gift card
  if payment_method.source == "gift_card" and payment_method.balance < amount then
    return "Error: insufficient gift card balance to pay for the order"
  end

  -- Modify the payment method
  table.insert(history, J.object {
    { "transaction_type", "payment" }, { "amount", amount }, { "payment_method_id", a.payment_method_id },
  })
  table.insert(history, J.object {
    { "transaction_type", "refund" }, { "amount", amount }, { "payment_method_id", history[1].payment_method_id },
  })
  -- If payment is made by gift card, update the balance
  local changed = false
  if payment_method.source == "gift_card" then
    payment_method.balance = J.round(payment_method.balance - amount, 2)
    changed = true
  end
  -- If refund is made to a gift card, update the balance
  if history[1].payment_method_id:find("gift_card", 1, true) then
    local old = must(user.payment_methods, history[1].payment_method_id)
    old.balance = J.round(old.balance + amount, 2)
    changed = true
  end
  if changed then S.put(db, users_t, order.user_id, user) end
  S.put(db, orders_t, a.order_id, order)
  return J.dumps(order)
end

function H.modify_user_address(ctx, a)
  local db = ctx.db
  local user = S.get(db, users_t, a.user_id)
  if user == nil then return "Error: user not found" end
  J.set(user, "address", address(a))
  S.put(db, users_t, a.user_id, user)
  return J.dumps(user)
end

function H.return_delivered_order_items(ctx, a)
  local db = ctx.db
  -- Check if the order exists and is delivered
  local order = S.get(db, orders_t, a.order_id)
  if order == nil then return "Error: order not found" end
  if order.status ~= "delivered" then return "Error: non-delivered order cannot be returned" end

  -- Check if the payment method exists and is either the original payment method or a gift card
  local user = must_get(db, users_t, order.user_id)
  if user.payment_methods[a.payment_method_id] == nil then return "Error: payment method not found" end
  local function first() return order.payment_history[1] or S.raise("list index out of range") end
  if not a.payment_method_id:find("gift_card", 1, true) and a.payment_method_id ~= first().payment_method_id then
    return "Error: payment method should be either the original payment method or a gift card"
  end

  -- Check if the items to be returned exist (there could be duplicate items in either list)
  local all_item_ids = {}
  for i, item in ipairs(order.items) do all_item_ids[i] = item.item_id end
  for _, item_id in ipairs(a.item_ids) do
    if count(a.item_ids, item_id) > count(all_item_ids, item_id) then return "Error: some item not found" end
  end

  -- Update the order status
  J.set(order, "status", "return requested")
  J.set(order, "return_items", sorted(a.item_ids))
  J.set(order, "return_payment_method_id", a.payment_method_id)
  S.put(db, orders_t, a.order_id, order)
  return J.dumps(order)
end

function H.think(ctx, a)
  return ""
end

function H.transfer_to_human_agents(ctx, a)
  return "Transfer successful"
end

M.writes = {
  cancel_pending_order = true, exchange_delivered_order_items = true, modify_pending_order_address = true,
  modify_pending_order_items = true, modify_pending_order_payment = true, modify_user_address = true,
  return_delivered_order_items = true,
}

return M
