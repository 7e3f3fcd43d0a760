#!/usr/bin/env python3
"""Write τ-bench's airline and retail databases as SQLite fixtures.

    python3 suites/taubench/make_fixtures.py /path/to/taubench   # the folder with airline/ and retail/

reads `<taubench>/<domain>/data/*.json` (τ-bench's data at commit 59a200c,
MIT licence: see LICENSE beside this script) and writes
`suites/taubench/<domain>/db.sql`: the schema and one INSERT per record, in
the files' order (a table's rowid order is τ-bench's dict order, which its
tools iterate in). It also writes `suites/taubench/<domain>/tools_info.lua`:
each tool's name, description and JSON Schema exactly as its `get_info()`
returns them, read from `<taubench>/upstream/<domain>/*.py`.

Each record is a row; its top-level fields are columns. A field τ-bench
nests (a dict or a list) is a JSON column holding exactly the text Python's
`json.dumps` gives for it (", " and ": " separators, ASCII escapes, floats as
Python prints them), so a tool's result is byte for byte τ-bench's. Numeric
columns are declared without a type: SQLite then keeps 3 and 3.0 apart, as
Python's `str()`, and so τ-bench's state hash, does.
"""

import json
import os
import sys

# table: (file, key column (None: the dict key is not a field), [(column, kind)])
# kind: "text" | "num" | "json"; columns in τ-bench's key order.
DOMAINS = {
    "airline": {
        "flights": ("flights.json", "flight_number", [
            ("flight_number", "text"), ("origin", "text"), ("destination", "text"),
            ("scheduled_departure_time_est", "text"), ("scheduled_arrival_time_est", "text"), ("dates", "json"),
        ]),
        "reservations": ("reservations.json", "reservation_id", [
            ("reservation_id", "text"), ("user_id", "text"), ("origin", "text"), ("destination", "text"),
            ("flight_type", "text"), ("cabin", "text"), ("flights", "json"), ("passengers", "json"),
            ("payment_history", "json"), ("created_at", "text"), ("total_baggages", "num"),
            ("nonfree_baggages", "num"), ("insurance", "text"),
            # set by cancel_reservation (τ-bench adds the key then): NULL = absent
            ("status", "text"),
        ]),
        "users": ("users.json", None, [
            ("user_id", "key"), ("name", "json"), ("address", "json"), ("email", "text"), ("dob", "text"),
            ("payment_methods", "json"), ("saved_passengers", "json"), ("membership", "text"),
            ("reservations", "json"),
        ]),
    },
    "retail": {
        "users": ("users.json", None, [
            ("user_id", "key"), ("name", "json"), ("address", "json"), ("email", "text"),
            ("payment_methods", "json"), ("orders", "json"),
        ]),
        "products": ("products.json", "product_id", [
            ("name", "text"), ("product_id", "text"), ("variants", "json"),
        ]),
        "orders": ("orders.json", "order_id", [
            ("order_id", "text"), ("user_id", "text"), ("address", "json"), ("items", "json"),
            ("fulfillments", "json"), ("status", "text"), ("payment_history", "json"),
            # set by the tools that change an order (τ-bench adds the keys then): NULL = absent
            ("cancel_reason", "text"), ("exchange_items", "json"), ("exchange_new_items", "json"),
            ("exchange_payment_method_id", "text"), ("exchange_price_difference", "num"),
            ("return_items", "json"), ("return_payment_method_id", "text"),
        ]),
    },
}

SQL_TYPES = {"text": "TEXT", "key": "TEXT", "json": "TEXT /* JSON */", "num": "/* number: no type, so 3 and 3.0 stay apart */"}


def literal(v, kind):
    if v is None:
        return "NULL"
    if kind == "json":
        v = json.dumps(v)
    elif kind == "num":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise SystemExit(f"not a number: {v!r}")
        return repr(v)
    if not isinstance(v, str):
        raise SystemExit(f"not a string: {v!r}")
    return "'" + v.replace("'", "''") + "'"


def lua_value(v, indent=""):
    """A Lua literal for a JSON value (empty lists as A{}, evalua's array)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "nil"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    inner = indent + "  "
    if isinstance(v, list):
        if not v:
            return "A {}"
        return "{\n" + "".join(f"{inner}{lua_value(x, inner)},\n" for x in v) + indent + "}"
    if not v:
        return "{}"
    items = "".join(f"{inner}[{json.dumps(k)}] = {lua_value(x, inner)},\n" for k, x in v.items())
    return "{\n" + items + indent + "}"


def tools_info(src, domain):
    """Every tool's get_info() of upstream/<domain>, in ALL_TOOLS order."""
    import importlib.util
    import types

    # tau_bench.envs.tool is all the tool files import from τ-bench.
    for name in ["tau_bench", "tau_bench.envs"]:
        sys.modules.setdefault(name, types.ModuleType(name))
    spec = importlib.util.spec_from_file_location("tau_bench.envs.tool", os.path.join(src, "upstream", "tool.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    sys.modules["tau_bench.envs.tool"] = tool
    pkg = f"taubench_upstream_{domain}"
    spec = importlib.util.spec_from_file_location(
        pkg, os.path.join(src, "upstream", domain, "__init__.py"), submodule_search_locations=[os.path.join(src, "upstream", domain)]
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[pkg] = mod
    spec.loader.exec_module(mod)
    return [t.get_info()["function"] for t in mod.ALL_TOOLS]


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    src = sys.argv[1]
    here = os.path.dirname(os.path.abspath(__file__))
    for domain, tables in DOMAINS.items():
        out = [
            f"-- τ-bench's {domain} database (sierra-research/tau-bench at 59a200c, MIT licence: ../LICENSE),",
            "-- written by make_fixtures.py: one row per record, nested fields as JSON text in Python's json.dumps format.",
            "",
        ]
        for table, (_, key, cols) in tables.items():
            defs = []
            for c, kind in cols:
                d = f"  {c} {SQL_TYPES[kind]}".rstrip()
                if c == (key or "user_id"):
                    d += " PRIMARY KEY"
                defs.append(d)
            out.append(f"CREATE TABLE {table} (\n" + ",\n".join(defs) + "\n);")
        out.append("")
        for table, (file, key, cols) in tables.items():
            data = json.load(open(os.path.join(src, domain, "data", file), encoding="utf-8"))
            names = [c for c, _ in cols]
            for k, rec in data.items():
                known = set(names)
                extra = [f for f in rec if f not in known]
                if extra:
                    raise SystemExit(f"{domain}/{file} {k}: fields without a column: {extra}")
                if key is not None and rec.get(key) != k:
                    raise SystemExit(f"{domain}/{file} {k}: the key is not the record's {key}")
                order = [c for c, kind in cols if kind != "key" and c in rec]
                expected = [c for c, kind in cols if kind != "key"][: len(order)]
                if order != expected or list(rec) != order:
                    raise SystemExit(f"{domain}/{file} {k}: fields in another order: {list(rec)}")
                vals = [literal(k if kind == "key" else rec.get(c), kind) for c, kind in cols]
                out.append(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join(vals)});")
        path = os.path.join(here, domain, "db.sql")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        print(f"wrote {path}")
        infos = tools_info(src, domain)
        path = os.path.join(here, domain, "tools_info.lua")
        with open(path, "w", encoding="utf-8") as f:
            f.write(
                f"-- τ-bench's {domain} tools as their get_info() describes them (sierra-research/tau-bench at 59a200c,\n"
                "-- MIT licence: ../LICENSE), written by make_fixtures.py. The handlers are in ../lib/.\n"
                "local A = require(\"evalua\").array\n"
                "return " + lua_value(infos) + "\n"
            )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
