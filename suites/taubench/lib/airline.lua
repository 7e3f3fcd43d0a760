-- τ-bench's airline tools, ported from tau_bench/envs/airline/tools/*.py
-- (sierra-research/tau-bench at 59a200c, MIT licence: ../LICENSE).
--
-- Each handler does what the Python one does, in the same order, and returns
-- the same text: `json.dumps(record)` (see pyjson), or the same
-- "Error: ..." string where the Python returns one. Where the Python raises,
-- the handler raises the exception's message (store.raise): the call fails,
-- the agent sees `Error: <message>`, and nothing changed before it.

local J = require("lib.pyjson")
local S = require("lib.store")
local calc = require("lib.calculate")

local M = {}

local flights_t = S.table("flights", "flight_number", {
  { "flight_number", "text" }, { "origin", "text" }, { "destination", "text" },
  { "scheduled_departure_time_est", "text" }, { "scheduled_arrival_time_est", "text" }, { "dates", "json" },
})
local reservations_t = S.table("reservations", "reservation_id", {
  { "reservation_id", "text" }, { "user_id", "text" }, { "origin", "text" }, { "destination", "text" },
  { "flight_type", "text" }, { "cabin", "text" }, { "flights", "json" }, { "passengers", "json" },
  { "payment_history", "json" }, { "created_at", "text" }, { "total_baggages", "num" },
  { "nonfree_baggages", "num" }, { "insurance", "text" }, { "status", "text" },
})
local users_t = S.table("users", "user_id", {
  { "user_id", "key" }, { "name", "json" }, { "address", "json" }, { "email", "text" }, { "dob", "text" },
  { "payment_methods", "json" }, { "saved_passengers", "json" }, { "membership", "text" },
  { "reservations", "json" },
})
M.tables = { flights = flights_t, reservations = reservations_t, users = users_t }

-- The key order of the objects an agent passes, as the schema lists them
-- (a model writes them so; Python keeps the order it gets).
local ARG_KEYS = { "flight_number", "date", "first_name", "last_name", "dob", "payment_id", "amount" }

local function ordered(v) return J.ordered(v, ARG_KEYS) end

-- The flight record without its dates, as `{k: v for k, v in flight.items() if k != "dates"}`.
local function without_dates(f)
  local o = J.object()
  for _, k in ipairs(J.keys(f)) do
    if k ~= "dates" then J.set(o, k, f[k]) end
  end
  return o
end

-- dict.update(other): keys of `other` set on `o` in order.
local function update(o, other)
  for _, k in ipairs(J.keys(other)) do J.set(o, k, other[k]) end
end

local function sum_amounts(list)
  local s = 0
  for _, p in ipairs(list) do s = s + p.amount end
  return s
end

M.handlers = {}
local H = M.handlers

function H.book_reservation(ctx, a)
  local db = ctx.db
  local user = S.get(db, users_t, a.user_id)
  if user == nil then return "Error: user not found" end

  -- assume each task makes at most 3 reservations
  local reservation_id = "HATHAT"
  if S.has(db, reservations_t, reservation_id) then
    reservation_id = "HATHAU"
    if S.has(db, reservations_t, reservation_id) then reservation_id = "HATHAV" end
  end

  local payment_methods = ordered(a.payment_methods)
  local passengers = ordered(a.passengers)
  local reservation = J.object {
    { "reservation_id", reservation_id }, { "user_id", a.user_id }, { "origin", a.origin },
    { "destination", a.destination }, { "flight_type", a.flight_type }, { "cabin", a.cabin },
    { "flights", ordered(a.flights) }, { "passengers", passengers }, { "payment_history", payment_methods },
    { "created_at", "2024-05-15T15:00:00" }, { "total_baggages", a.total_baggages },
    { "nonfree_baggages", a.nonfree_baggages }, { "insurance", a.insurance },
  }

  -- update flights and calculate price
  local total_price = 0
  for _, flight in ipairs(reservation.flights) do
    local flight_number = flight.flight_number
    local flight_data = S.get(db, flights_t, flight_number)
    if flight_data == nil then return "Error: flight " .. flight_number .. " not found" end
    local flight_date_data = flight_data.dates[flight.date]
    if flight_date_data == nil then
      return "Error: flight " .. flight_number .. " not found on date " .. flight.date
    end
    if flight_date_data.status ~= "available" then
      return "Error: flight " .. flight_number .. " not available on date " .. flight.date
    end
    local seats = S.must(flight_date_data, "available_seats")
    if S.must(seats, a.cabin) < #passengers then
      return "Error: not enough seats on flight " .. flight_number
    end
    J.set(flight, "price", flight_date_data.prices[a.cabin])
    J.set(flight, "origin", flight_data.origin)
    J.set(flight, "destination", flight_data.destination)
    total_price = total_price + flight.price * #passengers
  end

  if a.insurance == "yes" then total_price = total_price + 30 * #passengers end
  total_price = total_price + 50 * a.nonfree_baggages

  local methods = user.payment_methods
  for _, pm in ipairs(payment_methods) do
    local payment_id, amount = pm.payment_id, pm.amount
    if methods[payment_id] == nil then return "Error: payment method " .. payment_id .. " not found" end
    local source = methods[payment_id].source
    if source == "gift_card" or source == "certificate" then
      if methods[payment_id].amount < amount then
        return "Error: not enough balance in payment method " .. payment_id
      end
    end
  end
  local paid = sum_amounts(payment_methods)
  if paid ~= total_price then
    return "Error: payment amount does not add up, total price is " .. J.num(total_price) .. ", but paid " .. J.num(paid)
  end

  -- if checks pass, deduct payment and update seats
  for _, pm in ipairs(payment_methods) do
    local payment_id, amount = pm.payment_id, pm.amount
    if methods[payment_id] == nil then
      -- The same certificate twice: Python's `del` raises after the earlier
      -- deductions happened; they stay, as in τ-bench.
      S.put(db, users_t, a.user_id, user)
      S.raise(S.key_repr(payment_id))
    end
    if methods[payment_id].source == "gift_card" then
      methods[payment_id].amount = methods[payment_id].amount - amount
    elseif methods[payment_id].source == "certificate" then
      J.del(methods, payment_id)
    end
  end

  S.insert(db, reservations_t, reservation_id, reservation)
  table.insert(user.reservations, reservation_id)
  S.put(db, users_t, a.user_id, user)
  return J.dumps(reservation)
end

function H.calculate(ctx, a)
  return calc.calculate(a.expression)
end

function H.cancel_reservation(ctx, a)
  local db = ctx.db
  local reservation = S.get(db, reservations_t, a.reservation_id)
  if reservation == nil then return "Error: reservation not found" end
  -- reverse the payment
  local refunds = {}
  for _, payment in ipairs(reservation.payment_history) do
    refunds[#refunds + 1] = J.object { { "payment_id", payment.payment_id }, { "amount", -payment.amount } }
  end
  for _, r in ipairs(refunds) do table.insert(reservation.payment_history, r) end
  J.set(reservation, "status", "cancelled")
  S.put(db, reservations_t, a.reservation_id, reservation)
  return J.dumps(reservation)
end

function H.get_reservation_details(ctx, a)
  return S.dumps(ctx.db, reservations_t, a.reservation_id) or "Error: user not found"
end

function H.get_user_details(ctx, a)
  return S.dumps(ctx.db, users_t, a.user_id) or "Error: user not found"
end

local AIRPORTS = {
  { "SFO", "San Francisco" }, { "JFK", "New York" }, { "LAX", "Los Angeles" }, { "ORD", "Chicago" },
  { "DFW", "Dallas" }, { "DEN", "Denver" }, { "SEA", "Seattle" }, { "ATL", "Atlanta" }, { "MIA", "Miami" },
  { "BOS", "Boston" }, { "PHX", "Phoenix" }, { "IAH", "Houston" }, { "LAS", "Las Vegas" }, { "MCO", "Orlando" },
  { "EWR", "Newark" }, { "CLT", "Charlotte" }, { "MSP", "Minneapolis" }, { "DTW", "Detroit" },
  { "PHL", "Philadelphia" }, { "LGA", "LaGuardia" },
}

function H.list_all_airports(ctx, a)
  return J.dumps(J.object(AIRPORTS))
end

-- Flights in τ-bench's dict order matching a WHERE clause.
local function flights_where(db, where, ...)
  local out = {}
  for _, row in ipairs(db:all(flights_t.select .. " WHERE " .. where .. " ORDER BY rowid", ...)) do
    out[#out + 1] = S.decode(flights_t, row)
  end
  return out
end

function H.search_direct_flight(ctx, a)
  local results = J.array()
  for _, flight in ipairs(flights_where(ctx.db, "origin = ? AND destination = ?", a.origin, a.destination)) do
    local d = flight.dates[a.date]
    if d ~= nil and d.status == "available" then
      -- results add flight except dates, but add flight["datas"][date]
      local r = without_dates(flight)
      update(r, d)
      results[#results + 1] = r
    end
  end
  return J.dumps(results)
end

-- Python's int() of a string of digits (with optional sign and spaces).
local function py_int(s)
  local t = s:match("^%s*([-+]?%d+)%s*$")
  if t == nil then
    S.raise("invalid literal for int() with base 10: " .. S.key_repr(s))
  end
  return math.tointeger(tonumber(t))
end

function H.search_onestop_flight(ctx, a)
  local db, date = ctx.db, a.date
  local results = J.array()
  local firsts = flights_where(db, "origin = ?", a.origin)
  local cache = {}
  for _, flight1 in ipairs(firsts) do
    local seconds = cache[flight1.destination]
    if seconds == nil then
      seconds = flights_where(db, "origin = ? AND destination = ?", flight1.destination, a.destination)
      cache[flight1.destination] = seconds
    end
    for _, flight2 in ipairs(seconds) do
      local date2 = date
      if flight1.scheduled_arrival_time_est:find("+1", 1, true) then
        date2 = "2024-05-" .. J.num(py_int(date:sub(-2)) + 1)
      end
      if not (flight1.scheduled_arrival_time_est > flight2.scheduled_departure_time_est) then
        local d1, d2 = flight1.dates[date], flight2.dates[date2]
        if d1 ~= nil and d2 ~= nil and d1.status == "available" and d2.status == "available" then
          local result1 = without_dates(flight1)
          update(result1, d1)
          J.set(result1, "date", date)
          local result2 = without_dates(flight2)
          -- τ-bench reads flight2's entry for `date` here, not `date2`.
          update(result2, S.must(flight2.dates, date))
          J.set(result2, "date", date2)
          results[#results + 1] = J.array { result1, result2 }
        end
      end
    end
  end
  return J.dumps(results)
end

function H.send_certificate(ctx, a)
  local db = ctx.db
  local user = S.get(db, users_t, a.user_id)
  if user == nil then return "Error: user not found" end
  -- add a certificate, assume at most 3 cases per task
  for _, id in ipairs { 3221322, 3221323, 3221324 } do
    local payment_id = "certificate_" .. id
    if user.payment_methods[payment_id] == nil then
      J.set(user.payment_methods, payment_id,
        J.object { { "source", "certificate" }, { "amount", a.amount }, { "id", payment_id } })
      S.put(db, users_t, a.user_id, user)
      return "Certificate " .. payment_id .. " added to user " .. a.user_id .. " with amount " .. J.num(a.amount) .. "."
    end
  end
  return nil
end

function H.think(ctx, a)
  return ""
end

function H.transfer_to_human_agents(ctx, a)
  return "Transfer successful"
end

-- The reservation's user, as `users[reservation["user_id"]]` (KeyError when absent).
local function owner(db, reservation)
  return S.must_get(db, users_t, reservation.user_id)
end

function H.update_reservation_baggages(ctx, a)
  local db = ctx.db
  local reservation = S.get(db, reservations_t, a.reservation_id)
  if reservation == nil then return "Error: reservation not found" end

  local total_price = 50 * math.max(0, a.nonfree_baggages - reservation.nonfree_baggages)
  local user = owner(db, reservation)
  local payment_method = user.payment_methods[a.payment_id]
  if payment_method == nil then return "Error: payment method not found" end
  if payment_method.source == "certificate" then
    return "Error: certificate cannot be used to update reservation"
  elseif payment_method.source == "gift_card" and payment_method.amount < total_price then
    return "Error: gift card balance is not enough"
  end

  J.set(reservation, "total_baggages", a.total_baggages)
  J.set(reservation, "nonfree_baggages", a.nonfree_baggages)
  if payment_method.source == "gift_card" then
    payment_method.amount = payment_method.amount - total_price
    S.put(db, users_t, reservation.user_id, user)
  end
  if total_price ~= 0 then
    table.insert(reservation.payment_history, J.object { { "payment_id", a.payment_id }, { "amount", total_price } })
  end
  S.put(db, reservations_t, a.reservation_id, reservation)
  return J.dumps(reservation)
end

function H.update_reservation_flights(ctx, a)
  local db = ctx.db
  local reservation = S.get(db, reservations_t, a.reservation_id)
  if reservation == nil then return "Error: reservation not found" end
  local passengers = #reservation.passengers

  -- update flights and calculate price
  local total_price = 0
  local flights = ordered(a.flights)
  for _, flight in ipairs(flights) do
    -- if existing flight, ignore
    local existing
    for _, f in ipairs(reservation.flights) do
      if f.flight_number == flight.flight_number and f.date == flight.date and a.cabin == reservation.cabin then
        existing = f
        break
      end
    end
    if existing ~= nil then
      total_price = total_price + existing.price * passengers
      J.set(flight, "price", existing.price)
      J.set(flight, "origin", existing.origin)
      J.set(flight, "destination", existing.destination)
    else
      local flight_number = flight.flight_number
      local flight_data = S.get(db, flights_t, flight_number)
      if flight_data == nil then return "Error: flight " .. flight_number .. " not found" end
      local flight_date_data = flight_data.dates[flight.date]
      if flight_date_data == nil then
        return "Error: flight " .. flight_number .. " not found on date " .. flight.date
      end
      if flight_date_data.status ~= "available" then
        return "Error: flight " .. flight_number .. " not available on date " .. flight.date
      end
      local seats = S.must(flight_date_data, "available_seats")
      if S.must(seats, a.cabin) < passengers then
        return "Error: not enough seats on flight " .. flight_number
      end
      J.set(flight, "price", flight_date_data.prices[a.cabin])
      J.set(flight, "origin", flight_data.origin)
      J.set(flight, "destination", flight_data.destination)
      total_price = total_price + flight.price * passengers
    end
  end

  local old = 0
  for _, f in ipairs(reservation.flights) do old = old + f.price end
  total_price = total_price - old * passengers

  -- check payment
  local user = owner(db, reservation)
  local payment_method = user.payment_methods[a.payment_id]
  if payment_method == nil then return "Error: payment method not found" end
  if payment_method.source == "certificate" then
    return "Error: certificate cannot be used to update reservation"
  elseif payment_method.source == "gift_card" and payment_method.amount < total_price then
    return "Error: gift card balance is not enough"
  end

  -- if checks pass, deduct payment and update seats
  if payment_method.source == "gift_card" then
    payment_method.amount = payment_method.amount - total_price
    S.put(db, users_t, reservation.user_id, user)
  end
  J.set(reservation, "flights", flights)
  if total_price ~= 0 then
    table.insert(reservation.payment_history, J.object { { "payment_id", a.payment_id }, { "amount", total_price } })
  end
  -- do not make flight database update here, assume it takes time to be updated
  S.put(db, reservations_t, a.reservation_id, reservation)
  return J.dumps(reservation)
end

function H.update_reservation_passengers(ctx, a)
  local db = ctx.db
  local reservation = S.get(db, reservations_t, a.reservation_id)
  if reservation == nil then return "Error: reservation not found" end
  if #a.passengers ~= #reservation.passengers then
    return "Error: number of passengers does not match"
  end
  J.set(reservation, "passengers", ordered(a.passengers))
  S.put(db, reservations_t, a.reservation_id, reservation)
  return J.dumps(reservation)
end

--- What each tool writes (τ-bench's tools that change the database).
M.writes = {
  book_reservation = true, cancel_reservation = true, send_certificate = true,
  update_reservation_baggages = true, update_reservation_flights = true, update_reservation_passengers = true,
}

return M
