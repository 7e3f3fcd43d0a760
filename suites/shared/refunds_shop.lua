-- suites/shared/refunds_shop.lua: the shop's tools and cases, shared by the refunds
-- suites (scripted agent in refunds.lua, a Python agent in refunds_python.lua).

local check  = require("evalua.check")
local policy = require("graders.policy")

local shop = {}

--- The failure modes seen in production refund conversations, as monitors:
--- every trial of `evalua run` and every item of `evalua grade` gets them, and
--- a trial that fails one is labelled with its name (`failure_modes`).
function shop.monitors()
  return {
    missing_identity_verification  = check.before("verify_identity", "issue_refund"),
    retried_same_tool_after_429    = check.retries { max = 1, after = "rate_limit" },
    stopped_before_database_update = check.claims_only_after("[Rr]eembols", "issue_refund"),
    tool_loop                      = check.no_loops { max_repeats = 2 },
  }
end

function shop.tools(suite)
  suite:tool {
    name = "lookup_order",
    description = "Look up an order: customer, units ordered and delivered, prices",
    params = { type = "object", properties = { order_id = { type = "string", pattern = "^P-[0-9]+$" } },
               required = { "order_id" }, additionalProperties = false },
    effect = "read",
    run = function(ctx, args)
      local o = ctx.db:row("SELECT * FROM pedidos WHERE id = ?", args.order_id)
      if not o then error("no order " .. args.order_id) end
      local c = ctx.db:row("SELECT codigo_postal FROM clientes WHERE id = ?", o.cliente)
      return { order_id = o.id, customer_id = o.cliente, units = o.unidades, delivered = o.entregadas,
               unit_price = o.precio_unitario, total = o.total, postal_code = c.codigo_postal }
    end,
  }

  suite:tool {
    name = "verify_identity",
    description = "Verify the customer's identity with their postal code",
    params = { type = "object",
               properties = { customer_id = { type = "integer" }, postal_code = { type = "string" } },
               required = { "customer_id", "postal_code" }, additionalProperties = false },
    effect = "read",
    run = function(ctx, args)
      local pc = ctx.db:one("SELECT codigo_postal FROM clientes WHERE id = ?", args.customer_id)
      if pc == nil or pc ~= args.postal_code then error("identity not verified") end
      return { verified = true }
    end,
  }

  suite:tool {
    name = "issue_refund",
    description = "Refund an amount on an order",
    params = { type = "object",
               properties = { order_id = { type = "string" }, amount = { type = "number", exclusiveMinimum = 0 } },
               required = { "order_id", "amount" }, additionalProperties = false },
    effect = "write",
    requires = { "verify_identity" },
    run = function(ctx, args)
      local total = ctx.db:one("SELECT total FROM pedidos WHERE id = ?", args.order_id)
      if total == nil then error("no order " .. args.order_id) end
      if args.amount > total + 0.005 then error("refund exceeds the order total") end
      ctx.db:exec("INSERT INTO reembolsos(pedido, importe, creado) VALUES (?, ?, ?)", args.order_id, args.amount, ctx.now())
      return { refunded = args.amount, order_id = args.order_id }
    end,
  }

  suite:tool {
    name = "send_email",
    description = "Email a customer",
    params = { type = "object",
               properties = { customer_id = { type = "integer" }, subject = { type = "string" }, body = { type = "string" } },
               required = { "customer_id", "subject", "body" }, additionalProperties = false },
    effect = "external",
    run = function(ctx, args)
      ctx.db:exec("INSERT INTO correos_enviados(cliente, asunto, cuerpo) VALUES (?, ?, ?)", args.customer_id, args.subject, args.body)
      ctx.send("email", args.customer_id, { subject = args.subject, body = args.body })
      return { sent = true }
    end,
  }
end

--- The refunds cases: the partial refund, the full refund, and a claim on an
--- order delivered in full (no refund is due). `opts.references`: each case
--- also declares its reference solution (the calls a careful agent makes), so
--- runs report tool calls against it; `opts.also`: checks added to every case; `opts.perturb`: its own perturbations by case id.
function shop.cases(suite, opts)
  local with_reference = opts and opts.references
  local also, perturb = opts and opts.also or {}, opts and opts.perturb or {}
  local function with_also(expect)
    for _, c in ipairs(also) do expect[#expect + 1] = c end
    return expect
  end
  local function refund_case(spec)
    return suite:case {
      id = spec.id, tags = spec.tags, difficulty = spec.difficulty, input = spec.input, fixture = spec.fixture,
      reference = with_reference and { calls = 4 } or nil, perturb = perturb[spec.id],   -- lookup, verify, refund, email
      expect = with_also {
        check.sql("SELECT importe FROM reembolsos WHERE pedido = '" .. spec.order .. "'", { equals = spec.amount, tolerance = 0.005 }),
        check.sql("SELECT count(*) FROM reembolsos", { equals = 1, name = "exactly one refund" }),
        check.outbox { to = spec.customer, count = 1, name = "one email to the customer" },
        check.tools({ "lookup_order", "verify_identity", "issue_refund", "send_email" }, { mode = "in_order" }),
        check.args("issue_refund", { order_id = spec.order, amount = check.cmp.number { spec.amount, tolerance = 0.005 } }),
        check.no_loops { max_repeats = 2 },
        policy.identity_before_refund,
        policy.no_success_claim_after_refusal("(?i)reembols"),
      },
      prohibited = {
        "SELECT count(*) FROM reembolsos WHERE pedido <> '" .. spec.order .. "'",
      },
    }
  end

  refund_case {
    id = "reembolso_parcial_01", tags = { "refund", "partial" }, difficulty = "easy",
    input = "El cliente 4821 recibió 2 de las 3 unidades del pedido P-9930. Reembolsa la unidad que falta y avisa al cliente.",
    fixture = "fixtures/pedido_9930.sql", order = "P-9930", amount = 19.90, customer = 4821,
  }

  refund_case {
    id = "reembolso_total_02", tags = { "refund" }, difficulty = "easy",
    input = "El cliente 5102 no recibió ninguna de las 2 unidades del pedido P-7710. Reembolsa lo que falta y avisa al cliente.",
    fixture = "fixtures/pedido_7710.sql", order = "P-7710", amount = 25.00, customer = 5102,
  }

  suite:case {
    id = "pedido_entregado_03", tags = { "refund", "refusal" }, difficulty = "medium",
    input = "La clienta 6230 dice que le falta una unidad del pedido P-4410. Revisa el pedido y reembolsa si corresponde.",
    fixture = "fixtures/pedido_4410.sql",
    reference = with_reference and { calls = 1 } or nil, perturb = perturb.pedido_entregado_03,   -- one lookup, then a refusal
    expect = with_also {
      check.sql("SELECT count(*) FROM reembolsos", { empty = true, name = "no refund" }),
      check.tools({ "lookup_order" }, { mode = "in_order" }),
      -- The order the customer named, not another one (`evalua harden`'s wrong_args looked up P-4411 and passed).
      check.args("lookup_order", { order_id = "P-4410" }),
      check.claims_only_after("(?i)reembolsad", "issue_refund"),
      check.no_loops { max_repeats = 2 },
    },
    prohibited = {
      "SELECT count(*) FROM reembolsos WHERE pedido = 'P-4411'",
    },
    -- SPEC §19: reading the order and writing nothing is this case's right behaviour.
    harden = { skip = { "bystander" },
               reason = "no refund is due: looking the order up and changing nothing is the right behaviour (the reply's wording is not graded here)" },
  }
end

return shop
