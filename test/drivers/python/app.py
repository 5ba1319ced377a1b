"""The psycopg 3 app of test/drivers/: the same session as the pgx, pgjdbc and node-postgres apps
(../README.md). Parameters written %b go in binary (int2/int4 ids, timestamptz, numeric, uuid,
jsonb, int4[], bytea); %s lets psycopg choose (text for str, with no type). psycopg prepares a statement after it has run
five times, and the items go in one pipeline (one Sync for the three).
"""

import datetime
import decimal
import json
import os
import sys
import uuid

import psycopg
from psycopg.types.json import Jsonb
from psycopg.types.numeric import Int4

CUSTOMERS = 25
SIGN_UP = (
    "INSERT INTO customers (email, name, signed_up_at, external_ref, profile)"
    " VALUES (%s, %s, %b, %b, %b) RETURNING id"
)


class Generator:
    """The apps' shared generator (a 31-bit LCG), so every app sends the same values."""

    def __init__(self, seed):
        self.state = seed

    def __call__(self):
        self.state = (self.state * 1103515245 + 12345) & 0x7FFFFFFF
        return self.state


def uuid_of(i, x):
    return uuid.UUID(f"{i:08x}-{x & 0xFFFF:04x}-4{x % 0xFFF:03x}-8{(x >> 8) % 0xFFF:03x}-{x * 7919:012x}")


def receipt(i, x):
    body = bytearray((i * 31 + k * 7 + x) % 256 for k in range(32))
    body[0], body[31] = 0x00, 0xFF
    return bytes(body)


def cents(c):
    return decimal.Decimal(c).scaleb(-2)


def main():
    url = os.environ.get("DATABASE_URL")
    if not url:
        print("psycopg app: DATABASE_URL is not set", file=sys.stderr)
        return 2
    nxt = Generator(35)
    base = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    ids, refs, items = [], [], 0
    with psycopg.connect(url, application_name="drivers-python", autocommit=True) as conn:
        cur = conn.cursor()
        for i in range(CUSTOMERS):
            x = nxt()
            signed_up = base + datetime.timedelta(days=i, seconds=x % 86400, milliseconds=x % 1000)
            ref = uuid_of(i, x)
            profile = {"tier": ["gold", "silver", "bronze"][x % 3], "newsletter": x % 2 == 0, "visits": x % 50}
            cur.execute(SIGN_UP, (f"customer{i}@example.com", f"Customer {i}", signed_up, ref, Jsonb(profile)))
            (customer_id,) = cur.fetchone()
            ids.append(customer_id)
            refs.append(ref)

            # The order, its items (one pipeline), its receipt and its total, in one transaction.
            with conn.transaction():
                placed = signed_up + datetime.timedelta(seconds=x % 7200)
                tags = [Int4(x % 5 + 1), Int4(x % 7 + 1)]
                cur.execute(
                    "INSERT INTO orders (customer_id, placed_at, tags) VALUES (%b, %b, %b) RETURNING id",
                    (customer_id, placed, tags),
                    binary=True,
                )
                (order_id,) = cur.fetchone()
                rows = []
                for _ in range(3):
                    y = nxt()
                    rows.append((order_id, f"SKU-{y % 40}", Int4(y % 4 + 1), cents(y % 5000 + 99)))
                    items += 1
                with conn.pipeline():
                    cur.executemany(
                        "INSERT INTO order_items (order_id, sku, quantity, unit_price) VALUES (%b, %s, %b, %b)", rows
                    )
                cur.execute("INSERT INTO receipts (order_id, body) VALUES (%b, %b)", (order_id, receipt(i, x)))
                cur.execute(
                    "UPDATE orders SET total = (SELECT sum(quantity * unit_price) FROM order_items WHERE order_id = %b),"
                    " status = 'placed' WHERE id = %b",
                    (order_id, order_id),
                )

            # What the app reads back.
            cur.execute(
                "SELECT id, total FROM orders WHERE customer_id = %b AND placed_at >= %b ORDER BY id",
                (customer_id, signed_up),
                binary=True,
            )
            cur.fetchall()
            if i % 2 == 0:
                cur.execute("SELECT count(*) FROM orders WHERE tags && %b", ([Int4(i % 5 + 1)],))
                cur.fetchone()
            if i % 3 == 0:
                cur.execute("SELECT count(*) FROM customers WHERE profile @> %b", (Jsonb({"tier": "gold"}),))
                cur.fetchone()
                cur.execute("SELECT name FROM customers WHERE external_ref = %b", (ref,))
                cur.fetchone()

        # A customer signing up twice: the unique violation the app expects and reports.
        try:
            cur.execute(SIGN_UP, ("customer3@example.com", "Customer 3 again", base, refs[3], Jsonb({"tier": "gold"})))
            raise SystemExit("psycopg app: expected a unique violation, got none")
        except psycopg.errors.UniqueViolation as e:
            duplicate = e.sqlstate

        for customer_id in ids[:5]:
            cur.execute(
                "UPDATE orders SET status = 'shipped' WHERE customer_id = %b AND total > %b", (customer_id, cents(1000))
            )
        cur.execute("SELECT count(*) FROM orders")
        (orders,) = cur.fetchone()
    print(json.dumps({"driver": "psycopg", "customers": len(ids), "orders": orders, "items": items, "duplicate": duplicate}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
