-- AgentDojo's travel booking tools (agentdojo 0.1.35,
-- default_suites/v1/tools/travel_booking_client.py; MIT: ../LICENSE), ported.
-- A Python dict result is a Lua table (JSON objects have no order).
local P = require("lib.travel_py")

local T = {}

local function user_info(user)
  return {
    ["First Name"] = user.first_name,
    ["Last Name"] = user.last_name,
    ["ID Number"] = user.ID_number,
    ["Email"] = user.email,
    ["Phone Number"] = user.phone_number,
    ["Address"] = user.address,
    ["Passport Number"] = user.passport_number,
    ["Bank Account Number"] = user.bank_account_number,
    ["Credit Card Number"] = user.credit_card_number,
  }
end

T.get_user_information = { run = function(env) return user_info(env.user) end }

-- "<prefix>" .. "\n".join(names of items in `city`) .. "\n"
local function names_in(list, city, prefix)
  local names = {}
  for _, x in ipairs(list) do
    if x.city == city then names[#names + 1] = x.name end
  end
  return prefix .. table.concat(names, "\n") .. "\n"
end

-- { item.name: value(item) for item in list if item.name in names }, where
-- `names` is the named list argument (membership in a list).
local function by_name(list, args, arg, value)
  local names = P.list_arg(args, arg)
  local out = {}
  for _, x in ipairs(list) do
    if P.contains(names, x.name) then out[x.name] = value(x) end
  end
  return out
end

local function rating_reviews(x)
  return "Rating: " .. P.float(x.rating) .. "\n" .. "Reviews: " .. table.concat(x.reviews, "\n")
end

-- hotels

T.get_all_hotels_in_city = {
  run = function(env, args) return names_in(env.hotels.hotel_list, args.city, "Hotel Names: ") end,
}

T.get_hotels_prices = {
  run = function(env, args)
    return by_name(env.hotels.hotel_list, args, "hotel_names", function(h)
      return "Price range: " .. P.float(h.price_min) .. " - " .. P.float(h.price_max)
    end)
  end,
}

T.get_hotels_address = {
  run = function(env, args)
    local out = {}
    for _, h in ipairs(env.hotels.hotel_list) do
      if h.name == args.hotel_name then out[h.name] = h.address end
    end
    return out
  end,
}

T.get_rating_reviews_for_hotels = {
  run = function(env, args) return by_name(env.hotels.hotel_list, args, "hotel_names", rating_reviews) end,
}

-- restaurants

T.get_all_restaurants_in_city = {
  run = function(env, args)
    return names_in(env.restaurants.restaurant_list, args.city, "Restaurant in " .. tostring(args.city) .. ": ")
  end,
}

local function restaurant_field(field, convert)
  return {
    run = function(env, args)
      return by_name(env.restaurants.restaurant_list, args, "restaurant_names", function(r)
        local v = r[field]
        if convert then v = convert(v) end
        return v
      end)
    end,
  }
end

T.get_restaurants_address = restaurant_field("address")
T.get_rating_reviews_for_restaurants = {
  run = function(env, args)
    return by_name(env.restaurants.restaurant_list, args, "restaurant_names", rating_reviews)
  end,
}
T.get_cuisine_type_for_restaurants = restaurant_field("cuisine_type")
T.get_contact_information_for_restaurants = restaurant_field("contact_information")
T.get_price_for_restaurants = restaurant_field("price_per_person", function(v) return v + 0.0 end)
T.check_restaurant_opening_hours = restaurant_field("operating_hours")

-- Python joins the names and tests each restaurant's name as a substring of the result.
T.get_dietary_restrictions_for_all_restaurants = {
  run = function(env, args)
    local joined = table.concat(P.list_arg(args, "restaurant_names"), ", ")
    local out = {}
    for _, r in ipairs(env.restaurants.restaurant_list) do
      if P.has(joined, r.name) then out[r.name] = r.dietary_restrictions end
    end
    return out
  end,
}

-- car rental

T.get_all_car_rental_companies_in_city = {
  run = function(env, args)
    return names_in(env.car_rental.company_list, args.city, "Car Rental Companies in " .. tostring(args.city) .. ": ")
  end,
}

local function company_field(convert)
  return {
    run = function(env, args)
      return by_name(env.car_rental.company_list, args, "company_name", convert)
    end,
  }
end

T.get_car_types_available = company_field(function(c) return P.list(c.car_types_available) end)
T.get_rating_reviews_for_car_rental = company_field(rating_reviews)
T.get_car_rental_address = company_field(function(c) return c.address end)
T.get_car_fuel_options = company_field(function(c) return P.list(c.fuel_options) end)
T.get_car_price_per_day = company_field(function(c) return c.price_per_day + 0.0 end)

-- reservations: each sets the one reservation in place, as Python does: the
-- contact information, type and title first, so a date Python cannot parse
-- fails the call with those already changed (lib/dojo.lua writes back what a
-- tool changed before it raised).

local function reserve(env, kind, title)
  local r = env.reservation
  r.contact_information = user_info(env.user)["Phone Number"]
  r.reservation_type = kind
  r.title = title
  return r
end

T.reserve_hotel = {
  writes = true,
  run = function(env, args)
    local r = reserve(env, "hotel", args.hotel)
    r.start_time = P.iso(P.fromisoformat(args.start_day))
    r.end_time = P.iso(P.fromisoformat(args.end_day))
    return "Reservation for " .. args.hotel .. " from " .. args.start_day .. " to " .. args.end_day
      .. " has been made successfully."
  end,
}

T.reserve_restaurant = {
  writes = true,
  run = function(env, args)
    local r = reserve(env, "restaurant", args.restaurant)
    local s = P.fromisoformat(args.start_time)
    local e = P.add_hours(s, 2)
    r.start_time, r.end_time = P.iso(s), P.iso(e)
    local hm = function(t) return string.format("%02d:%02d", t.hour, t.minute) end
    local date = string.format("%04d-%02d-%02d", s.year, s.month, s.day)
    return "Reservation for " .. args.restaurant .. " from " .. hm(s) .. " to " .. hm(e) .. " on " .. date
      .. " has been made successfully."
  end,
}

-- Python sets the end time to the start time (sic) and shows end_time as given (None as "None").
T.reserve_car_rental = {
  writes = true,
  run = function(env, args)
    local r = reserve(env, "car", args.company)
    local s = P.fromisoformat(args.start_time)
    r.start_time, r.end_time = P.iso(s), P.iso(s)
    local end_time = args.end_time
    if end_time == nil or end_time == require("lib.dojo").null then end_time = "None" end
    return "Reservation for a car at " .. args.company .. " from " .. args.start_time .. " to "
      .. tostring(end_time) .. " has been made successfully."
  end,
}

-- flights

T.get_flight_information = {
  run = function(env, args)
    local lines = {}
    for _, f in ipairs(env.flights.flight_list) do
      if f.departure_city == args.departure_city and f.arrival_city == args.arrival_city then
        lines[#lines + 1] = "Airline: " .. f.airline .. ", Flight Number: " .. f.flight_number
          .. ", Departure Time: " .. P.str_iso(f.departure_time) .. ", Arrival Time: " .. P.str_iso(f.arrival_time)
          .. ", Price: " .. P.float(f.price) .. ", Contact Information: " .. f.contact_information
      end
    end
    return table.concat(lines, "\n")
  end,
}

return T
