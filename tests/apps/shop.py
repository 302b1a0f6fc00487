"""A small application on the DataStax Python driver, for tests/replay.rs: what `caplab capture`
records and `caplab run --replay` sends again.

    shop.py schema HOST PORT            creates keyspace shop and its tables (before a capture)
    shop.py run HOST PORT SECONDS OUT   the application's traffic; writes what it sent to OUT
    shop.py dump HOST PORT KEYSPACE     prints every row of the keyspace's tables, sorted, as JSON
    shop.py plant HOST PORT KEYSPACE    the schema in KEYSPACE, and user 1 named `planted` with a
                                        timestamp no write of the application's passes

Its traffic: 150 operations a second, and 450 in the last second of every five (a burst); of
them, about half reads of a user by a Zipf-skewed id (prepared SELECT, paged), a quarter
upserts of a user (prepared INSERT), an eighth UNLOGGED batches of three events for one user,
and an eighth orders placed with a lightweight transaction (INSERT … IF NOT EXISTS, each id
new). The driver sends its own timestamps, so rows written again with them end up the same
whatever the order. Everything is drawn from a fixed seed. With SHOP_BURST=instant in the
environment the 450 of each burst are all due at once, at the start of its second, and go out
as fast as the driver sends them (bench/bursty-replay.sh).
"""

import bisect
import json
import os
import random
import sys
import time

from cassandra import ConsistencyLevel
from cassandra.cluster import Cluster
from cassandra.query import BatchStatement, BatchType

KEYSPACE = "shop"
USERS = 1000
BASE, BURST = 150, 450
INSTANT = os.environ.get("SHOP_BURST") == "instant"

SCHEMA = [
    "CREATE KEYSPACE IF NOT EXISTS shop WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
    "CREATE TABLE IF NOT EXISTS shop.users (id int PRIMARY KEY, name text, balance bigint)",
    "CREATE TABLE IF NOT EXISTS shop.events (user_id int, seq int, payload blob, PRIMARY KEY (user_id, seq))",
    "CREATE TABLE IF NOT EXISTS shop.orders (id bigint PRIMARY KEY, user_id int, amount decimal)",
]


def zipf_cdf(n, s=1.1):
    weights = [1.0 / (k**s) for k in range(1, n + 1)]
    total, acc, cdf = sum(weights), 0.0, []
    for w in weights:
        acc += w / total
        cdf.append(acc)
    return cdf


def due_before(t):
    """Operations due in the first t seconds: BASE a second, BURST in the last of every five
    (all at its start when INSTANT)."""
    whole, rest = divmod(t, 5.0)
    ops = whole * (4 * BASE + BURST)
    burst = (rest >= 4.0) * BURST if INSTANT else max(rest - 4.0, 0.0) * BURST
    ops += min(rest, 4.0) * BASE + burst
    return int(ops)


def connect(host, port, keyspace=None):
    cluster = Cluster([host], port=port, protocol_version=5)
    return cluster, cluster.connect(keyspace)


def run(host, port, seconds, out):
    cluster, session = connect(host, port, KEYSPACE)
    read = session.prepare("SELECT name, balance FROM users WHERE id = ?")
    read.fetch_size = 100
    upsert = session.prepare("INSERT INTO users (id, name, balance) VALUES (?, ?, ?)")
    event = session.prepare("INSERT INTO events (user_id, seq, payload) VALUES (?, ?, ?)")
    order = session.prepare("INSERT INTO orders (id, user_id, amount) VALUES (?, ?, ?) IF NOT EXISTS")
    order.consistency_level = ConsistencyLevel.QUORUM
    rng, cdf = random.Random(74), zipf_cdf(USERS)
    counts = {"select_users": 0, "insert_users": 0, "batch_unlogged_insert_events": 0, "insert_orders_if": 0}
    futures, sent = [], 0
    start = time.monotonic()
    while True:
        t = time.monotonic() - start
        if t >= seconds:
            break
        for _ in range(due_before(t) - sent):
            user = bisect.bisect_left(cdf, rng.random()) + 1
            kind = rng.random()
            if kind < 0.5:
                futures.append(session.execute_async(read, (user,)))
                counts["select_users"] += 1
            elif kind < 0.75:
                futures.append(session.execute_async(upsert, (user, f"user-{user}-{sent}", rng.randrange(10**9))))
                counts["insert_users"] += 1
            elif kind < 0.875:
                batch = BatchStatement(batch_type=BatchType.UNLOGGED)
                for k in range(3):
                    batch.add(event, (user, sent * 3 + k, rng.randbytes(16)))
                futures.append(session.execute_async(batch))
                counts["batch_unlogged_insert_events"] += 1
            else:
                futures.append(session.execute_async(order, (sent, user, rng.randrange(1, 10**6) / 100)))
                counts["insert_orders_if"] += 1
            sent += 1
        time.sleep(0.001)
    for f in futures:
        f.result()
    cluster.shutdown()
    with open(out, "w") as f:
        json.dump({"sent": sent, "counts": counts}, f)


def dump(host, port, keyspace):
    cluster, session = connect(host, port, keyspace)
    tables = {}
    for table in ("users", "events", "orders"):
        rows = session.execute(f"SELECT * FROM {table}")
        tables[table] = sorted(json.dumps([str(v) for v in row]) for row in rows)
    cluster.shutdown()
    print(json.dumps(tables))


def plant(host, port, keyspace):
    cluster, session = connect(host, port)
    for cql in SCHEMA:
        session.execute(cql.replace("shop", keyspace, 1) if "KEYSPACE" in cql else cql.replace("shop.", f"{keyspace}."))
    session.execute(f"UPDATE {keyspace}.users USING TIMESTAMP 4102444800000000 SET name = 'planted' WHERE id = 1")
    cluster.shutdown()


if __name__ == "__main__":
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "schema":
        cluster, session = connect(host, port)
        for cql in SCHEMA:
            session.execute(cql)
        cluster.shutdown()
    elif mode == "run":
        run(host, port, float(sys.argv[4]), sys.argv[5])
    elif mode == "dump":
        dump(host, port, sys.argv[4])
    elif mode == "plant":
        plant(host, port, sys.argv[4])
