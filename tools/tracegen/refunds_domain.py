"""The refunds domain shared by the trace generators: a production shop, a scripted
"model" per conversation, seeded ids and a simulated clock.

Nothing here talks to a framework. Each generator (refunds_pydantic.py,
refunds_openinference.py, homegrown.py) runs the same scenarios through its own
instrumentation; this module only decides what the model says and what the tools
answer, so every conversation follows its seeded behaviour exactly.
"""
from __future__ import annotations

import copy
import json
import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

# ---------------------------------------------------------------------------
# The production shop (a superset of suites/fixtures/pedido_*.sql)


@dataclass(frozen=True)
class Customer:
    id: int
    name: str
    email: str
    postal_code: str
    female: bool


@dataclass(frozen=True)
class Order:
    id: str
    customer: int
    units: int
    delivered: int
    unit_price: float

    @property
    def total(self) -> float:
        return round(self.units * self.unit_price, 2)

    @property
    def missing(self) -> int:
        return self.units - self.delivered

    @property
    def refund_due(self) -> float:
        return round(self.missing * self.unit_price, 2)


CUSTOMERS = {c.id: c for c in [
    Customer(4821, "Lucía Romero", "lucia@example.com", "28013", True),
    Customer(5102, "Iker Salas", "iker@example.com", "48001", False),
    Customer(6230, "Noa Vidal", "noa@example.com", "08002", True),
    Customer(7345, "Marta Gil", "marta.gil@example.com", "46001", True),
    Customer(7712, "Jon Etxeberria", "jon.e@example.com", "20001", False),
    Customer(8120, "Carmen Ruiz", "carmen.ruiz@example.com", "41004", True),
    Customer(8456, "Pablo Ortega", "pablo.ortega@example.com", "50003", False),
    Customer(9031, "Ana Beltrán", "ana.beltran@example.com", "29001", True),
    Customer(9377, "Diego Navarro", "dnavarro@example.com", "15003", False),
    Customer(9650, "Sara Molina", "sara.molina@example.com", "03002", True),
    Customer(3104, "Raúl Campos", "raul.campos@example.com", "37001", False),
]}

ORDERS = {o.id: o for o in [
    Order("P-9930", 4821, 3, 2, 19.90),
    Order("P-7710", 5102, 2, 0, 12.50),
    Order("P-4410", 6230, 2, 2, 44.00),   # delivered in full: no refund is due
    Order("P-5521", 7345, 4, 3, 8.75),
    Order("P-6604", 7712, 1, 0, 59.00),
    Order("P-3317", 8120, 5, 3, 6.40),
    Order("P-8842", 8456, 2, 1, 23.95),
    Order("P-2290", 9031, 3, 0, 15.00),
    Order("P-1175", 9377, 6, 4, 4.99),
    Order("P-7083", 9650, 2, 2, 31.50),   # delivered in full: no refund is due
    Order("P-4058", 3104, 1, 0, 120.00),
]}

PARTIAL_ORDERS = [o for o in ORDERS.values() if o.missing > 0]
FULL_ORDERS = [o for o in ORDERS.values() if o.missing == 0]

SYSTEM_PROMPT = (
    "Eres el agente de reembolsos de la tienda. Verifica la identidad del cliente antes de "
    "reembolsar, reembolsa solo lo no entregado y avisa al cliente por correo."
)

TOOL_SPECS = [
    {"name": "lookup_order",
     "description": "Look up an order: customer, units ordered and delivered, prices",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                    "required": ["order_id"], "additionalProperties": False}},
    {"name": "verify_identity",
     "description": "Verify the customer's identity with their postal code",
     "parameters": {"type": "object",
                    "properties": {"customer_id": {"type": "integer"}, "postal_code": {"type": "string"}},
                    "required": ["customer_id", "postal_code"], "additionalProperties": False}},
    {"name": "issue_refund",
     "description": "Refund an amount on an order",
     "parameters": {"type": "object",
                    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                    "required": ["order_id", "amount"], "additionalProperties": False}},
    {"name": "send_email",
     "description": "Email a customer",
     "parameters": {"type": "object",
                    "properties": {"customer_id": {"type": "integer"}, "subject": {"type": "string"},
                                   "body": {"type": "string"}},
                    "required": ["customer_id", "subject", "body"], "additionalProperties": False}},
]

RATE_LIMIT_ERROR = "HTTP 429 Too Many Requests (rate_limit_exceeded): retry after 2s"


class ToolError(Exception):
    """A tool failed; the message is what the agent (and the trace) sees."""


class ShopBackend:
    """The tools' implementation, fresh per conversation. `faults` maps a tool name to
    {call number (1-based): error message} to inject failures such as a 429."""

    def __init__(self, faults: dict[str, dict[int, str]] | None = None):
        self.faults = faults or {}
        self.counts: dict[str, int] = {}
        self.refunds: list[tuple[str, float]] = []
        self.outbox: list[dict] = []
        self.log: list[dict] = []   # what actually happened, for the expected.json manifests

    def call(self, name: str, args: dict):
        n = self.counts[name] = self.counts.get(name, 0) + 1
        try:
            fault = self.faults.get(name, {}).get(n)
            if fault:
                raise ToolError(fault)
            result = getattr(self, "_" + name)(**args)
        except ToolError as e:
            self.log.append({"tool": name, "args": args, "status": "failed", "error": str(e)})
            raise
        self.log.append({"tool": name, "args": args, "status": "executed"})
        return result

    def _lookup_order(self, order_id: str):
        o = ORDERS.get(order_id)
        if o is None:
            raise ToolError("no order " + order_id)
        c = CUSTOMERS[o.customer]
        return {"order_id": o.id, "customer_id": o.customer, "units": o.units, "delivered": o.delivered,
                "unit_price": o.unit_price, "total": o.total, "postal_code": c.postal_code}

    def _verify_identity(self, customer_id: int, postal_code: str):
        c = CUSTOMERS.get(customer_id)
        if c is None or c.postal_code != postal_code:
            raise ToolError("identity not verified")
        return {"verified": True}

    def _issue_refund(self, order_id: str, amount: float):
        o = ORDERS.get(order_id)
        if o is None:
            raise ToolError("no order " + order_id)
        if amount > o.total + 0.005:
            raise ToolError("refund exceeds the order total")
        self.refunds.append((order_id, amount))
        return {"refunded": amount, "order_id": order_id}

    def _send_email(self, customer_id: int, subject: str, body: str):
        self.outbox.append({"to": customer_id, "subject": subject, "body": body})
        return {"sent": True}


# ---------------------------------------------------------------------------
# Scenarios: what the scripted model does in each conversation


@dataclass
class Call:
    name: str
    args: dict
    latency_ms: int = 120


@dataclass
class Step:
    """One model response: tool calls, or a final text."""
    calls: list[Call] = field(default_factory=list)
    text: str | None = None


@dataclass
class Turn:
    user: str
    steps: list[Step]


@dataclass
class Scenario:
    behaviour: str
    expected_failure_modes: list[str]
    description: str
    order: Order
    turns: list[Turn]
    faults: dict[str, dict[int, str]] = field(default_factory=dict)
    request_limit: int | None = None   # pydantic-ai UsageLimits(request_limit=...)

    @property
    def first_input(self) -> str:
        return self.turns[0].user


def eur(x: float) -> str:
    return ("%.2f" % x).replace(".", ",") + " EUR"


def units(n: int) -> str:
    return "1 unidad" if n == 1 else "%d unidades" % n


def request_text(o: Order, rng: random.Random) -> str:
    """The refund request as the suite's inputs phrase it (an operator writing to the agent)."""
    c = CUSTOMERS[o.customer]
    who = "La clienta" if c.female else "El cliente"
    if o.missing == 0:
        return "%s %d dice que le falta una unidad del pedido %s. Revisa el pedido y reembolsa si corresponde." % (
            who, c.id, o.id)
    if o.delivered == 0:
        return "%s %d no recibió ninguna de las %d unidades del pedido %s. Reembolsa lo que falta y avisa %s." % (
            who, c.id, o.units, o.id, "a la clienta" if c.female else "al cliente")
    what = "la unidad que falta" if o.missing == 1 else "las unidades que faltan"
    return "%s %d recibió %d de las %d unidades del pedido %s. Reembolsa %s y avisa %s." % (
        who, c.id, o.delivered, o.units, o.id, what, "a la clienta" if c.female else "al cliente")


def customer_text(o: Order, rng: random.Random) -> str:
    """The refund request in the customer's own voice (the multi-turn chats)."""
    c = CUSTOMERS[o.customer]
    first = c.name.split()[0]
    if o.delivered == 0:
        return "Hola, soy %s. No me ha llegado nada del pedido %s (%s). ¿Me devolvéis el dinero?" % (
            first, o.id, units(o.units))
    return "Hola, soy %s. Del pedido %s solo me llegaron %d de las %d unidades. ¿Me podéis devolver lo que falta?" % (
        first, o.id, o.delivered, o.units)


def _lookup(o: Order) -> Call:
    return Call("lookup_order", {"order_id": o.id}, 90)


def _verify(o: Order, postal: str | None = None) -> Call:
    return Call("verify_identity", {"customer_id": o.customer,
                                    "postal_code": postal or CUSTOMERS[o.customer].postal_code}, 140)


def _refund(o: Order) -> Call:
    return Call("issue_refund", {"order_id": o.id, "amount": o.refund_due}, 260)


EMAIL_BODIES = [
    "Hola {first}, te hemos reembolsado {amt} por {u} no entregada(s) del pedido {o}. Disculpa las molestias.",
    "Hola {first}: ya hemos devuelto {amt} correspondientes a {u} del pedido {o} que no llegaron. Un saludo.",
    "Estimada/o {first}, el importe de {amt} ({u} no entregada/s del pedido {o}) ya está en camino a tu cuenta.",
]


def _email(o: Order, variant: int = 0) -> Call:
    c = CUSTOMERS[o.customer]
    body = EMAIL_BODIES[variant % len(EMAIL_BODIES)].format(
        first=c.name.split()[0], amt=eur(o.refund_due), u=units(o.missing), o=o.id)
    return Call("send_email", {"customer_id": c.id, "subject": "Reembolso del pedido %s" % o.id, "body": body}, 310)


def _claim(o: Order, emailed: bool = True) -> str:
    s = "Reembolsados %s del pedido %s (%s no entregada%s)." % (
        eur(o.refund_due), o.id, units(o.missing), "" if o.missing == 1 else "s")
    if emailed:
        s += " He avisado %s por correo." % ("a la clienta" if CUSTOMERS[o.customer].female else "al cliente")
    return s


# Answers that claim nothing avoid the stem "reembols" altogether, so that SPEC §9's
# monitor regex "[Rr]eembols" only ever matches real claims.
def _full_delivery(o: Order) -> str:
    return ("He revisado el pedido %s: se entregaron las %d unidades, así que no procede ninguna devolución."
            % (o.id, o.units))


def build_scenario(behaviour: str, o: Order, rng: random.Random) -> Scenario:
    T = Turn
    S = Step
    if behaviour == "ok":
        return Scenario(behaviour, [], "lookup -> verify -> refund -> email -> claim", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_verify(o)]), S([_refund(o)]), S([_email(o, rng.randrange(3))]),
                                     S(text=_claim(o))])])
    if behaviour == "ok_multiturn":
        c = CUSTOMERS[o.customer]
        return Scenario(behaviour, [], "two user turns: asks for the postal code, then verify -> refund -> email -> claim", o, [
            T(customer_text(o, rng), [S([_lookup(o)]), S(text="Para tramitar la devolución necesito verificar tu identidad: ¿me indicas tu código postal?")]),
            T("Es el %s." % c.postal_code, [S([_verify(o)]), S([_refund(o)]), S([_email(o, rng.randrange(3))]), S(text=_claim(o))]),
        ])
    if behaviour == "no_refund_due":
        return Scenario(behaviour, [], "order delivered in full: lookup only, no claim", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S(text=_full_delivery(o))])])
    if behaviour == "identity_rejected":
        wrong = "%05d" % (int(CUSTOMERS[o.customer].postal_code) + 7)
        return Scenario(behaviour, [], "two user turns: wrong postal code, verify_identity fails (not a 429), refusal without claim", o, [
            T(customer_text(o, rng), [S([_lookup(o)]), S(text="Para tramitar la devolución necesito verificar tu identidad: ¿me indicas tu código postal?")]),
            T("Creo que es el %s." % wrong, [S([_verify(o, wrong)]),
                                             S(text="El código postal no coincide con el del pedido %s, así que no puedo tramitar la devolución. Si quieres, revísalo y vuelve a escribirnos." % o.id)]),
        ])
    if behaviour == "rate_limited_retry_once":
        return Scenario(behaviour, [], "issue_refund answers 429 once, the agent retries once (allowed by retries{max=1})", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_verify(o)]), S([_refund(o)]), S([_refund(o)]),
                                     S([_email(o, rng.randrange(3))]), S(text=_claim(o))])],
            faults={"issue_refund": {1: RATE_LIMIT_ERROR}})
    if behaviour == "missing_identity_verification":
        return Scenario(behaviour, ["missing_identity_verification"], "lookup -> refund (no verify_identity) -> email -> claim", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_refund(o)]), S([_email(o, rng.randrange(3))]), S(text=_claim(o))])])
    if behaviour == "missing_identity_no_email":
        return Scenario(behaviour, ["missing_identity_verification"], "lookup -> refund (no verify_identity) -> claim, no email", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_refund(o)]), S(text=_claim(o, emailed=False))])])
    if behaviour == "rate_limit_email_retries":
        return Scenario(behaviour, ["retried_same_tool_after_429"],
                        "send_email answers 429 twice; the agent retries at once, rewording the body each time (so no (tool,args) loop)", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_verify(o)]), S([_refund(o)]),
                                     S([_email(o, 0)]), S([_email(o, 1)]), S([_email(o, 2)]), S(text=_claim(o))])],
            faults={"send_email": {1: RATE_LIMIT_ERROR, 2: RATE_LIMIT_ERROR}})
    if behaviour == "rate_limit_refund_loop":
        return Scenario(behaviour, ["retried_same_tool_after_429", "tool_loop"],
                        "issue_refund answers 429 three times; the agent retries the same call at once until it passes", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_verify(o)]), S([_refund(o)]), S([_refund(o)]), S([_refund(o)]),
                                     S([_refund(o)]), S([_email(o, rng.randrange(3))]), S(text=_claim(o))])],
            faults={"issue_refund": {1: RATE_LIMIT_ERROR, 2: RATE_LIMIT_ERROR, 3: RATE_LIMIT_ERROR}})
    if behaviour == "rate_limit_lookup_giveup":
        return Scenario(behaviour, ["retried_same_tool_after_429", "tool_loop"],
                        "lookup_order answers 429 three times in a row; the agent retries at once, then gives up without a claim", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_lookup(o)]), S([_lookup(o)]),
                                     S(text="Ahora mismo el sistema de pedidos no responde (demasiadas peticiones). Vuelve a intentarlo en unos minutos.")])],
            faults={"lookup_order": {1: RATE_LIMIT_ERROR, 2: RATE_LIMIT_ERROR, 3: RATE_LIMIT_ERROR}})
    if behaviour == "claims_without_refund":
        return Scenario(behaviour, ["stopped_before_database_update"], "lookup -> verify -> claims the refund, issue_refund never called", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_verify(o)]), S(text=_claim(o, emailed=False))])])
    if behaviour == "claims_without_refund_multiturn":
        c = CUSTOMERS[o.customer]
        return Scenario(behaviour, ["stopped_before_database_update"], "two user turns: verify, then claims the refund without issue_refund", o, [
            T(customer_text(o, rng), [S([_lookup(o)]), S(text="Para tramitar la devolución necesito verificar tu identidad: ¿me indicas tu código postal?")]),
            T("%s" % c.postal_code, [S([_verify(o)]), S(text=_claim(o, emailed=False))]),
        ])
    if behaviour == "refund_failed_then_claims":
        return Scenario(behaviour, ["stopped_before_database_update"],
                        "issue_refund fails (database is locked, not a 429); the answer still claims the refund", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_verify(o)]), S([_refund(o)]), S(text=_claim(o, emailed=False))])],
            faults={"issue_refund": {1: "database is locked"}})
    if behaviour == "lookup_loop":
        return Scenario(behaviour, ["tool_loop"], "lookup_order with the same args 3 times, then the correct flow", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_lookup(o)]), S([_lookup(o)]), S([_verify(o)]), S([_refund(o)]),
                                     S([_email(o, rng.randrange(3))]), S(text=_claim(o))])])
    if behaviour == "loop_hits_request_limit":
        return Scenario(behaviour, ["tool_loop"],
                        "lookup_order again and again until pydantic-ai's UsageLimits(request_limit=5) stops the run: no answer, root span ERROR", o, [
            T(request_text(o, rng), [S([_lookup(o)]) for _ in range(8)])],
            request_limit=5)
    if behaviour == "missing_identity_and_loop":
        return Scenario(behaviour, ["missing_identity_verification", "tool_loop"],
                        "no verify_identity, and issue_refund executed 3 times with the same args", o, [
            T(request_text(o, rng), [S([_lookup(o)]), S([_refund(o)]), S([_refund(o)]), S([_refund(o)]), S(text=_claim(o, emailed=False))])])
    raise ValueError("unknown behaviour " + behaviour)


def expand_plan(plan: list[tuple[str, int]], rng: random.Random) -> list[Scenario]:
    """[(behaviour, count)] -> scenarios in a shuffled 'production' order."""
    out = []
    for behaviour, n in plan:
        for _ in range(n):
            pool = FULL_ORDERS if behaviour == "no_refund_due" else PARTIAL_ORDERS
            out.append(build_scenario(behaviour, rng.choice(pool), rng))
    rng.shuffle(out)
    return out


# ---------------------------------------------------------------------------
# Determinism: a simulated clock and seeded ids


class FakeClock:
    """Nanoseconds since the epoch, advanced by simulated latencies instead of real time.
    Every read moves it by a few microseconds so no two timestamps are equal."""

    def __init__(self, start: datetime, rng: random.Random):
        self.ns = int(start.timestamp()) * 1_000_000_000
        self.rng = rng

    def time_ns(self) -> int:
        self.ns += self.rng.randint(8_000, 60_000)
        return self.ns

    def advance_ms(self, ms: float):
        self.ns += int(ms * 1_000_000)

    def sleep_like(self, lo_ms: float, hi_ms: float):
        self.advance_ms(self.rng.uniform(lo_ms, hi_ms))

    def iso_now(self) -> str:
        """Read the clock (moving it a few microseconds) as RFC 3339 UTC with microseconds."""
        ns = self.time_ns()
        t = datetime.fromtimestamp(ns // 10**9, tz=timezone.utc).replace(microsecond=(ns // 1000) % 10**6)
        return t.isoformat(timespec="microseconds").replace("+00:00", "Z")


def install_fake_clock(clock: FakeClock):
    """Make the OpenTelemetry SDK take span and event timestamps from `clock`."""
    import opentelemetry.sdk.trace as sdk_trace
    sdk_trace.time_ns = clock.time_ns


def seeded_id_generator(rng: random.Random):
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class SeededIdGenerator(IdGenerator):
        def generate_span_id(self) -> int:
            return rng.getrandbits(64) or 1

        def generate_trace_id(self) -> int:
            return rng.getrandbits(128) or 1

    return SeededIdGenerator()


def seeded_uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def seeded_call_id(rng: random.Random) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "call_" + "".join(rng.choice(alphabet) for _ in range(24))


PRODUCTION_DAY = datetime(2026, 11, 3, 8, 0, 0, tzinfo=timezone.utc)


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def clone(x):
    return copy.deepcopy(x)
