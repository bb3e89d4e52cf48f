"""`db_slow_query`: a p99 latency alert on a service backed by Postgres; find the slow database,
the culprit query in pg_stat_statements, read its plan (a Seq Scan), add the missing index, verify."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, SessionScript, register
from scenarios.builder import ScriptBuilder, lit
from scenarios.draws import BASE32, Draws
from scenarios.text import Clock, fill_lines, fit, metric_series, psql_table

SERVICES = ("checkout", "orders", "billing", "inventory", "accounts", "shipping", "catalog", "ledger")
#: Base words of the culprit table and of decoy tables (the values carry a 4-char suffix).
TABLE_WORDS = ("orders", "order_items", "shipments", "invoices", "payments", "line_items", "customer_events",
               "audit_log", "sessions", "carts", "refund_requests", "ledger_entries")
COLUMN_WORDS = ("customer_ref", "tenant_key", "external_ref", "account_ref", "merchant_key", "order_ref",
                "session_key", "sku_code", "batch_ref", "partner_key")
#: Tables of the filler text: plain words, so they can never contain a fact value.
FILLER_TABLES = ("customers", "addresses", "products", "warehouses", "coupons", "refunds", "users", "prices",
                 "stock_levels", "carriers", "tax_rates", "webhooks", "feature_flags", "api_keys")
FILLER_COLUMNS = ("id", "status", "created_at", "updated_at", "total_cents", "currency", "email", "country",
                  "version", "quantity", "note", "amount", "kind", "priority", "owner_id")
USERS = ("app", "app_ro", "reporting", "migrator", "replicator", "postgres")
WAIT_EVENTS = ("ClientRead", "DataFileRead", "WALWrite", "Lock:transactionid", "LWLock:BufferMapping", "")
SETTINGS = (("work_mem", "kB"), ("shared_buffers", "8kB"), ("max_connections", ""), ("random_page_cost", ""),
            ("effective_cache_size", "8kB"), ("statement_timeout", "ms"), ("autovacuum_naptime", "s"),
            ("maintenance_work_mem", "kB"), ("max_wal_size", "MB"), ("checkpoint_timeout", "s"),
            ("default_statistics_target", ""), ("effective_io_concurrency", ""),
            ("idle_in_transaction_session_timeout", "ms"),
            ("log_min_duration_statement", "ms"), ("max_parallel_workers_per_gather", ""),
            ("lock_timeout", "ms"), ("wal_buffers", "8kB"), ("temp_buffers", "8kB"))
STATES = ("active", "idle", "idle in transaction", "active", "idle")
QUERY_TEXT_CHARS = 50
PANELS = (  # (metric name, query template, typical value)
    ("process_cpu_seconds_total", 'rate(process_cpu_seconds_total{{job="postgres",instance="{db}"}}[5m])', 0.6),
    ("pg_stat_database_numbackends", 'pg_stat_database_numbackends{{datname="app",instance="{db}"}}', 80.0),
    ("pg_stat_database_blks_hit_ratio", 'pg_stat_database_blks_hit_ratio{{instance="{db}"}}', 0.97),
    ("node_disk_reads_completed_total", 'rate(node_disk_reads_completed_total{{instance="{db}"}}[5m])', 900.0),
    ("pg_replication_lag_seconds", 'pg_replication_lag_seconds{{instance="{db}"}}', 0.4),
    ("http_server_requests_total", 'sum(rate(http_server_requests_total{{service="{svc}"}}[5m]))', 350.0),
    ("http_server_requests_total", 'sum(rate(http_server_requests_total{{service="{svc}",code=~"5.."}}[5m]))', 0.8),
)


class DbSlowQueryParams(ScenarioParams):
    pass


def ident_value(b: ScriptBuilder, word: str) -> str:
    """A SQL identifier value ``<word>_<4 base32>`` unlike every value drawn so far."""
    return b._fresh(lambda: f"{word}_{b.draws.token(4, BASE32)}")


def psql_fill(headers: Sequence[str], make_row: Callable[[], Sequence[object]], n_bytes: int, d: Draws,
              fixed: Sequence[Sequence[object]] = (), max_rows: int = 100_000, vary: int | None = None,
              pool: int = 40) -> str:
    """A psql table of ``fixed`` rows plus rows from ``make_row`` until about ``n_bytes``.

    At most ``pool`` rows come from ``make_row``; past that, rows repeat a random pooled row with
    column ``vary`` (digits) drawn afresh, which is much cheaper for big results."""
    rows = [[str(c) for c in r] for r in fixed]
    size = sum(len(c) + 3 for r in rows for c in r)
    made: list[list[str]] = []
    while size < n_bytes and len(rows) + len(made) < max_rows and len(made) < pool:
        row = [str(c) for c in make_row()]
        made.append(row)
        size += sum(len(c) + 3 for c in row)
    rows += made
    if size >= n_bytes or vary is None or not made or len(rows) >= max_rows:
        return psql_table(headers, rows)
    cells = [list(headers), *rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def render(r: Sequence[str], ws: Sequence[int]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(r, ws, strict=True))

    lines = [" " + render(r, widths) for r in cells]
    sep = "-" + "-+-".join("-" * w for w in widths) + "-"
    lines.insert(1, sep)
    pieces = []
    for r in made:
        left = " " + render(r[:vary], widths[:vary]) + (" | " if vary else "")
        right = (" | " + render(r[vary + 1:], widths[vary + 1:])) if vary < len(headers) - 1 else ""
        cell = r[vary]
        digits = len(cell) if cell.isdigit() else 0
        pieces.append((left, right, digits, cell))
    size = sum(len(x) + 1 for x in lines)
    width = widths[vary]
    while size < n_bytes and len(lines) - 2 < max_rows:
        left, right, digits, cell = pieces[d.integer(0, len(pieces) - 1)]
        mid = str(d.integer(10 ** (digits - 1), 10**digits - 1)) if digits else cell
        line = left + mid.ljust(width) + right
        lines.append(line)
        size += len(line) + 1
    lines.append(f"({len(lines) - 2} rows)")
    return "\n".join(lines)


def select_prefix(d: Draws, alias: str) -> str:
    """The first QUERY_TEXT_CHARS characters of a SELECT: a column list that never names a table."""
    cols = d.sample(FILLER_COLUMNS, 8)
    text = "SELECT " + ", ".join(f"{alias}.{c}" for c in cols)
    return text[:QUERY_TEXT_CHARS]


def filler_query(d: Draws) -> str:
    table = d.choice(FILLER_TABLES)
    col = d.choice(FILLER_COLUMNS)
    text = d.choice((
        f"UPDATE {table} SET {col} = $1, updated_at = now() WHERE id = $2",
        f"SELECT * FROM {table} WHERE {col} = $1 ORDER BY id LIMIT $2",
        f"INSERT INTO {table} ({col}, created_at) VALUES ($1, now())",
        f"DELETE FROM {table} WHERE created_at < now() - $1::interval",
        f"SELECT count(*) FROM {table} WHERE {col} IS NOT NULL",
    ))
    return text[:QUERY_TEXT_CHARS]


@register("db_slow_query")
class DbSlowQuery(ScenarioFamily):
    """Postgres: trace a p99 latency jump to a Seq Scan query, add the missing index, verify."""

    Params = DbSlowQueryParams

    def generate(self, seed: int) -> SessionScript:
        b = ScriptBuilder(self.name, seed, self.params)
        d = b.draws
        clock = Clock(d.child("clock"))
        turns = b.turns()
        svc = d.choice(SERVICES)

        alert = b.fact("alert_id", "alert", "alert")
        db = b.fact("database", "database", value=b._fresh(lambda: f"{svc}-pg-{d.token(4, BASE32)}"))
        db_decoys = [b.decoy("database", value=b._fresh(lambda: f"{svc}-pg-{d.token(4, BASE32)}"))
                     for _ in range(d.integer(2, 3))]
        qid = b.fact("query_id", "query_id", "qid")
        qid_decoys = [b.decoy("query_id", "qid") for _ in range(d.integer(3, 5))]
        table_words = d.sample(TABLE_WORDS, 3)
        table = b.fact("table", "table", value=ident_value(b, table_words[0]))
        table_decoys = [b.decoy("table", value=ident_value(b, w)) for w in table_words[1:]]
        col_words = d.sample(COLUMN_WORDS, 3)
        column = b.fact("filter_column", "column", value=ident_value(b, col_words[0]))
        col_decoys = [b.decoy("filter_column", value=ident_value(b, w)) for w in col_words[1:]]
        index = b.fact("new_index", "index", value=b._fresh(lambda: f"idx_{col_words[0]}_{d.token(6, BASE32)}"))
        op_id = b.fact("index_job", "job", "ddljob")
        # Filler query ids of pg_stat_statements carry the same shape, so they are decoys too.
        culprit_prefix = select_prefix(d, table_words[0][0])
        base_ms = round(d.uniform() * 30 + 15, 1)
        slow_ms = round(base_ms * (15 + d.uniform() * 60), 1)

        def latency_series(jump: bool, window: str) -> str:
            points = max(12, (b.payload_bytes() - 100 * (len(db_decoys) + 1)) // (36 * (len(db_decoys) + 1)))
            t0 = clock.now
            out = []
            instances = d.shuffled([db, *db_decoys])
            for i, inst in enumerate(instances):
                c = Clock(d.child("series", window, i), start=t0)
                labels = f'service="{svc}",db="{inst}",quantile="0.99"'
                if jump and inst == db:
                    out.append(metric_series(d, c, "http_server_request_duration_seconds", labels, points,
                                             base_ms / 1000, points * 2 // 3, slow_ms / 1000))
                elif not jump and inst == db:
                    out.append(metric_series(d, c, "http_server_request_duration_seconds", labels, points,
                                             slow_ms / 1000, points // 4, base_ms / 1000))
                else:
                    out.append(metric_series(d, c, "http_server_request_duration_seconds", labels, points,
                                             base_ms * (0.6 + d.uniform()) / 1000))
            clock.now = t0 + timedelta(minutes=points)
            return f"# query window: {window}\n" + "\n".join(out)

        def stat_row(q: str, heavy: bool, text: str) -> list[object]:
            calls = d.integer(2_000, 900_000)
            mean = round(d.uniform() * (slow_ms * 0.6 if heavy else 40) + 0.2, 3)
            return [q, calls, round(calls * mean, 1), mean, d.integer(1, 50) * calls // 10,
                    d.integer(0, 10**7), text]

        stat_headers = ["queryid", "calls", "total_exec_time", "mean_exec_time", "rows", "shared_blks_read",
                        "query"]

        def stat_statements() -> str:
            calls = d.integer(20_000, 400_000)
            fixed: list[list[object]] = [[qid, calls, round(calls * slow_ms, 1), slow_ms, d.integer(1, 40),
                                          d.integer(10**7, 10**9), culprit_prefix]]
            fixed += [stat_row(q, True, select_prefix(d, "t") if d.chance(0.5) else filler_query(d))
                      for q in qid_decoys]
            rows = d.shuffled(fixed)
            rows.sort(key=lambda r: -float(r[2]))  # type: ignore[arg-type]
            n_extra = min(30, max(2, b.payload_bytes() // 120))
            extra = []
            for _ in range(n_extra):
                extra.append(stat_row(b.decoy("query_id", "qid"), False, filler_query(d)))
            return psql_table(stat_headers, rows + extra)

        queries = [filler_query(d) for _ in range(24)]

        def slow_log(service_db: str, needles: Sequence[tuple[str, float, str]], n_bytes: int) -> str:
            """Postgres slow-statement log lines; ``needles`` are (query id, ms, text) entries placed at
            random positions, timestamps in order."""
            bodies = fill_lines(lambda: f"{d.uniform() * 900 + 100:.3f} ms  execute <unnamed>: {d.choice(queries)}",
                                max(0, n_bytes - 170 * len(needles)) * 100 // 160)
            for q, ms, text in needles:
                bodies.insert(d.integer(0, len(bodies)),
                              f"{ms:.3f} ms  execute <unnamed>: /* query_id={q} */ {text}...")
            lines = [f"{clock.tick(4000)} UTC [{d.integer(1000, 99999)}] app@app LOG:  duration: {body}"
                     for body in bodies]
            return f"-- log stream: postgres/{service_db}\n" + "\n".join(lines)

        def plan(scan_table: str, scan_col: str, join_table: str, join_col: str, seq: bool, n_bytes: int,
                 sort_col: str = "created_at") -> str:
            rows_removed = d.integer(2_000_000, 40_000_000)
            total = slow_ms if seq else round(d.uniform() * 20 + 1, 3)
            lines = [f"Nested Loop  (cost=0.43..{d.integer(50_000, 900_000)}.{d.integer(10, 99)} rows="
                     f"{d.integer(10, 900)} width=96) (actual time={d.uniform() * 4:.3f}..{total:.3f} rows="
                     f"{d.integer(1, 400)} loops=1)"]
            if seq:
                lines += [f"  ->  Seq Scan on {scan_table} o  (cost=0.00..{d.integer(50_000, 900_000)}.12 "
                          f"rows={d.integer(10, 900)} width=64) (actual time={d.uniform() * 4:.3f}.."
                          f"{total - 1:.3f} rows={d.integer(1, 400)} loops=1)",
                          f"        Filter: (({scan_col})::text = ($1)::text)",
                          f"        Rows Removed by Filter: {rows_removed}",
                          f"        Buffers: shared hit={d.integer(100, 9000)} read={d.integer(10**5, 10**7)}"]
            else:
                lines += [f"  ->  Index Scan using {scan_table}_pkey on {scan_table} o  (cost=0.43..8.45 rows=1 "
                          f"width=64) (actual time=0.021..0.034 rows=1 loops=1)",
                          "        Index Cond: (id = $1)"]
            lines += [f"  ->  Index Scan using {join_table}_pkey on {join_table} c  (cost=0.43..11.75 rows=1 "
                      f"width=32) (actual time=0.041..0.041 rows=1 loops={d.integer(1, 400)})",
                      f"        Index Cond: (id = o.{join_col})"]

            def node() -> str:
                t = d.choice(FILLER_TABLES)
                kind = d.choice(("Index Scan using {t}_pkey on {t}", "Bitmap Heap Scan on {t}", "Hash Join",
                                 "Memoize", "Sort"))
                return (f"        ->  {kind.format(t=t)}  (cost={d.uniform() * 9:.2f}..{d.uniform() * 900:.2f} "
                        f"rows={d.integer(1, 999)} width={d.integer(8, 128)}) (actual time=0.0{d.integer(10, 99)}"
                        f"..0.{d.integer(100, 999)} rows={d.integer(1, 99)} loops={d.integer(1, 400)})")
            size = sum(len(x) for x in lines)
            while size < n_bytes:
                extra = node()
                lines.append(extra)
                size += len(extra) + 1
            lines = [f"Limit  (cost=0.43..{d.integer(50_000, 900_000)}.50 rows=50 width=96) (actual time="
                     f"{d.uniform() * 4:.3f}..{total + 0.2:.3f} rows=50 loops=1)",
                     f"  ->  Sort  (cost=0.43..{d.integer(50_000, 900_000)}.50 rows={d.integer(10, 900)} width=96) "
                     f"(actual time={d.uniform() * 4:.3f}..{total + 0.1:.3f} rows=50 loops=1)",
                     f"        Sort Key: o.{sort_col} DESC",
                     f"        Sort Method: top-N heapsort  Memory: {d.integer(25, 90)}kB",
                     "        ->  " + lines[0], *("            " + x for x in lines[1:])]
            lines += [f"Planning Time: {d.uniform() * 2:.3f} ms", f"Execution Time: {total + 0.4:.3f} ms"]
            width = max(len(x) for x in lines) + 2
            body = [" " + x for x in lines]
            return "\n".join([" " + "QUERY PLAN".center(width), "-" * width, *body, f"({len(lines)} rows)"])

        # Core chain ----------------------------------------------------------------------------
        # Payloads and faults are made lazily, in session order, so the clock runs forward.
        Extra = Callable[[], dict[str, Any]]
        core: list[tuple[str, dict[str, str], Callable[[], str], list[str], Extra]] = []
        no_extra: Extra = dict
        p99 = (f'histogram_quantile(0.99, sum by (le, db) (rate(http_server_request_duration_seconds_bucket'
               f'{{service="{svc}"}}[5m])))')
        core.append(("metrics_query", {"query": lit(p99), "window_minutes": lit(180)},
                     lambda: latency_series(True, "last 180m"), ["database"], no_extra))

        stat_sql = ("SELECT queryid, calls, total_exec_time, mean_exec_time, rows, shared_blks_read, "
                    f"left(query, {QUERY_TEXT_CHARS}) AS query FROM pg_stat_statements "
                    "ORDER BY total_exec_time DESC")

        def stat_fault() -> dict[str, Any]:
            if not fault_draw < 0.25:
                return {"fault": Fault(kind="timeout", fails=d.integer(1, 2))} if fault_draw < 0.45 else {}
            needles = [(q, d.uniform() * slow_ms * 0.5 + 300, select_prefix(d, "t")) for q in qid_decoys]
            needles += [(qid, slow_ms * (0.9 + d.uniform() * 0.2), culprit_prefix) for _ in range(3)]
            fallback = b.make_step("log_search", {"service": "database", "query": lit("duration:"),
                                                  "since_minutes": lit(60)},
                                   slow_log(db, d.shuffled(needles), b.payload_bytes(2.0)), ["query_id"],
                                   step_id="s_stat_fallback")
            return {"fault": Fault(kind="http_404", fails=None, fallback=fallback)}

        fault_draw = d.uniform()
        core.append(("db_query", {"database": "database", "sql": lit(stat_sql), "limit": lit(50)},
                     stat_statements, ["query_id"], stat_fault))

        explain_fault = Fault(kind="timeout", fails=d.integer(1, 2), timeout_s=60.0) if d.chance(0.25) else None
        core.append(("db_explain", {"database": "database", "query_id": "query_id"},
                     lambda: plan(table, column, table_decoys[0], col_decoys[0], True, b.payload_bytes(0.5),
                                  col_decoys[1]),
                     ["table", "filter_column"], lambda: {"fault": explain_fault}))

        seq_sql = ("SELECT relname, seq_scan, seq_tup_read, idx_scan, n_live_tup FROM pg_stat_user_tables "
                   "ORDER BY seq_tup_read DESC")

        def user_tables(include: Sequence[str], indexed: bool = False) -> str:
            fixed = [[t, d.integer(10_000, 900_000) if t == table and not indexed else d.integer(0, 900),
                      d.integer(10**9, 10**11) if t == table and not indexed else d.integer(10**4, 10**8),
                      d.integer(10**5, 10**8), d.integer(10**5, 10**8)] for t in include]
            return psql_fill(["relname", "seq_scan", "seq_tup_read", "idx_scan", "n_live_tup"],
                             lambda: [d.choice(FILLER_TABLES), d.integer(0, 900), d.integer(10**4, 10**8),
                                      d.integer(10**3, 10**8), d.integer(10**3, 10**8)],
                             b.payload_bytes(0.5), d, fixed, max_rows=len(FILLER_TABLES) + len(include))

        core.append(("db_query", {"database": "database", "sql": lit(seq_sql), "limit": lit(25)},
                     lambda: user_tables([table, *table_decoys]), [], no_extra))

        def created() -> str:
            return "\n".join([
                f"CREATE INDEX CONCURRENTLY {index} ON public.{table} USING btree ({column});",
                f"job: {op_id}",
                "status: done",
                f"duration: {d.integer(40, 900)}.{d.integer(0, 999):03d} s",
                f"index size: {d.integer(80, 4000)} MB",
                f"ANALYZE public.{table};",
            ])

        core.append(("db_create_index", {"database": "database", "table": "table", "columns": "filter_column"},
                     created, ["new_index", "index_job"],
                     lambda: {"shortcut": Call(tool="db_drop_table", args={"database": db, "table": table})}))

        idx_sql = ("SELECT relname, indexrelname, idx_scan, idx_tup_read, pg_size_pretty(pg_relation_size("
                   "indexrelid)) AS size FROM pg_stat_user_indexes ORDER BY idx_scan DESC")
        core.append(("db_query", {"database": "database", "sql": lit(idx_sql), "limit": lit(40)},
                     lambda: psql_fill(["relname", "indexrelname", "idx_scan", "idx_tup_read", "size"],
                               lambda: (lambda t: [t, f"{t}_pkey", d.integer(10, 10**7), d.integer(10, 10**8),
                                                   f"{d.integer(1, 900)} MB"])(d.choice(FILLER_TABLES)),
                               b.payload_bytes(0.5), d,
                               [[table, index, d.integer(5_000, 90_000), d.integer(5_000, 90_000),
                                 f"{d.integer(80, 4000)} MB"]], max_rows=40), [], no_extra))
        core.append(("metrics_query", {"query": lit(p99), "window_minutes": lit(20)},
                     lambda: latency_series(False, "last 20m"), [], no_extra))

        # Exploration ---------------------------------------------------------------------------
        n_explore = max(0, turns - len(core))
        e = d.child("explore")
        slots = sorted(e.integer(1, len(core) - 1) for _ in range(n_explore))
        counter = 0
        unexplained = list(qid_decoys)

        def record(tool: str, args: dict[str, str], payload: str) -> None:
            b.step(tool, args, fit(payload, self.params.payload_max_bytes))

        def explore(available: set[str]) -> None:
            nonlocal counter
            counter += 1
            options = ["activity", "locks", "sizes", "panel", "slow_log", "settings"]
            if "query_id" in available:
                options += ["qid_log"]
                if unexplained:
                    options += ["other_explain"]
            if "table" in available:
                options += ["table_log", "user_tables"]
            kind = e.choice(options)
            known_tables = [table, *table_decoys] if "table" in available else []
            if kind == "activity":
                sql = ("SELECT pid, usename, state, wait_event, now() - query_start AS runtime, "
                       "left(query, 50) AS query FROM pg_stat_activity WHERE datname = 'app'")
                record("db_query", {"database": "database", "sql": lit(sql), "limit": lit(100 + counter)},
                       psql_fill(["pid", "usename", "state", "wait_event", "runtime", "query"],
                                 lambda: [e.integer(1000, 99999), e.choice(USERS), e.choice(STATES),
                                          e.choice(WAIT_EVENTS),
                                          f"00:00:{e.integer(0, 59):02d}.{e.integer(0, 999):03d}",
                                          filler_query(e)], b.payload_bytes(), e, vary=0))
            elif kind == "locks":
                sql = ("SELECT l.locktype, l.relation::regclass, l.mode, l.granted, a.pid, a.wait_event_type "
                       "FROM pg_locks l JOIN pg_stat_activity a USING (pid)")
                record("db_query", {"database": "database", "sql": lit(sql), "limit": lit(100 + counter)},
                       psql_fill(["locktype", "relation", "mode", "granted", "pid", "wait_event_type"],
                                 lambda: [e.choice(("relation", "transactionid", "virtualxid")),
                                          e.choice(FILLER_TABLES), e.choice(("AccessShareLock", "RowExclusiveLock",
                                                                             "ShareLock", "ExclusiveLock")),
                                          e.choice(("t", "t", "t", "f")), e.integer(1000, 99999),
                                          e.choice(("Lock", "LWLock", "IO", "Client"))], b.payload_bytes(), e,
                                 vary=4))
            elif kind == "sizes":
                sql = ("SELECT relname, pg_size_pretty(pg_total_relation_size(relid)) AS total, n_live_tup, "
                       "n_dead_tup, last_autovacuum FROM pg_stat_user_tables ORDER BY "
                       "pg_total_relation_size(relid) DESC")
                fixed = [[t, f"{e.integer(2, 300)} GB", e.integer(10**6, 10**9), e.integer(0, 10**6),
                          clock.tick(99_000)] for t in known_tables]
                record("db_query", {"database": "database", "sql": lit(sql), "limit": lit(100 + counter)},
                       psql_fill(["relname", "total", "n_live_tup", "n_dead_tup", "last_autovacuum"],
                                 lambda: [e.choice(FILLER_TABLES), f"{e.integer(1, 900)} MB", e.integer(10, 10**7),
                                          e.integer(0, 10**5), clock.tick(99_000)], b.payload_bytes(), e, fixed,
                                 vary=3))
            elif kind == "panel":
                name, template, base = e.choice(PANELS)
                inst = e.choice([db, *db_decoys])
                record("metrics_query", {"query": lit(template.format(db=inst, svc=svc)),
                                         "window_minutes": lit(30 + counter)},
                       metric_series(e, clock, name, f'service="{svc}"' if "{svc}" in template else
                                     f'instance="{inst}"', max(8, b.payload_bytes() // 36), base))
            elif kind == "slow_log":
                record("log_search", {"service": "database", "query": lit("duration:"),
                                      "since_minutes": lit(60 + counter)},
                       slow_log(db, [], b.payload_bytes()))
            elif kind == "settings":
                sql = "SELECT name, setting, unit, source FROM pg_settings WHERE source <> 'default'"
                record("db_query", {"database": "database", "sql": lit(sql), "limit": lit(100 + counter)},
                       psql_table(["name", "setting", "unit", "source"],
                                  [[name, e.integer(1, 65536), unit, e.choice(("configuration file", "command line",
                                                                               "database"))]
                                   for name, unit in e.sample(SETTINGS, e.integer(6, len(SETTINGS)))]))
            elif kind == "qid_log":
                needles = [(qid, slow_ms * (0.9 + e.uniform() * 0.2), culprit_prefix)
                           for _ in range(e.integer(2, 6))]
                record("log_search", {"service": "database", "query": "query_id",
                                      "since_minutes": lit(60 + counter)},
                       slow_log(db, needles, b.payload_bytes()))
            elif kind == "other_explain":
                other = unexplained.pop(0)
                record("db_explain", {"database": "database", "query_id": lit(other)},
                       plan(e.choice(FILLER_TABLES), e.choice(FILLER_COLUMNS), e.choice(FILLER_TABLES), "owner_id",
                            False, b.payload_bytes(0.5)))
            elif kind == "table_log":
                def vac() -> str:
                    return (f"{clock.tick(30_000)} UTC [{e.integer(1000, 99999)}] LOG:  automatic "
                            f"{e.choice(('vacuum', 'analyze'))} of table \"app.public.{table}\": index scans: "
                            f"{e.integer(0, 3)}, pages: {e.integer(0, 9)} removed, {e.integer(10**3, 10**7)} remain, "
                            f"tuples: {e.integer(0, 10**5)} removed, elapsed: {e.uniform() * 60:.2f} s")
                record("log_search", {"service": "database", "query": "table", "since_minutes": lit(240 + counter)},
                       "\n".join(fill_lines(vac, b.payload_bytes())))
            else:
                sql2 = "SELECT relname, seq_scan, seq_tup_read, idx_scan, n_live_tup FROM pg_stat_user_tables"
                record("db_query", {"database": "database", "sql": lit(sql2), "limit": lit(100 + counter)},
                       user_tables(known_tables, indexed="new_index" in available))

        available = {"alert_id"}
        b.interleave(core, slots, explore, available)
        task = (f"Alert {alert}: p99 latency of service {svc} jumped well above its SLO. The service is backed "
                f"by Postgres. Find the slow query, explain why it is slow, fix it without downtime, and verify "
                f"latency recovered. Report the query id, the table it scans and the name of the index you "
                f"created.")
        return b.build(task, ["alert_id"], ["query_id", "table", "new_index"])

