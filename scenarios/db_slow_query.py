"""`db_slow_query`: a p99 latency alert on a service backed by Postgres; find the slow database,
the culprit query in pg_stat_statements, read its plan (a Seq Scan), add the missing index, verify.

Look-ups (docs/model.md 1): ``query_id`` is latent, the culprit among the statements
pg_stat_statements lists, found by comparing their timings with the alert; every other fact is literal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Annotated, ClassVar

from pydantic import Field, StrictStr

from harness.core.tools import ToolArgs, ToolRegistry
from scenarios.base import Call, Fault, ScenarioFamily, ScenarioParams, Series, SessionScript, register
from scenarios.builder import CoreStep, ScriptDraft, lit
from scenarios.draws import BASE32, Draws
from scenarios.ops_tools import Limit, Name, ops_tools
from scenarios.text import Clock, fill_lines, metric_series, psql_table

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
STAT_HEADERS = ("queryid", "calls", "total_exec_time", "mean_exec_time", "rows", "shared_blks_read", "query")

# The SQL of the db_query steps.
STAT_SQL = ("SELECT queryid, calls, total_exec_time, mean_exec_time, rows, shared_blks_read, "
            f"left(query, {QUERY_TEXT_CHARS}) AS query FROM pg_stat_statements ORDER BY total_exec_time DESC")
SEQ_SCAN_SQL = ("SELECT relname, seq_scan, seq_tup_read, idx_scan, n_live_tup FROM pg_stat_user_tables "
                "ORDER BY seq_tup_read DESC")
INDEX_USAGE_SQL = ("SELECT relname, indexrelname, idx_scan, idx_tup_read, pg_size_pretty(pg_relation_size("
                   "indexrelid)) AS size FROM pg_stat_user_indexes ORDER BY idx_scan DESC")
ACTIVITY_SQL = ("SELECT pid, usename, state, wait_event, now() - query_start AS runtime, "
                "left(query, 50) AS query FROM pg_stat_activity WHERE datname = 'app'")
LOCKS_SQL = ("SELECT l.locktype, l.relation::regclass, l.mode, l.granted, a.pid, a.wait_event_type "
             "FROM pg_locks l JOIN pg_stat_activity a USING (pid)")
TABLE_SIZES_SQL = ("SELECT relname, pg_size_pretty(pg_total_relation_size(relid)) AS total, n_live_tup, "
                   "n_dead_tup, last_autovacuum FROM pg_stat_user_tables ORDER BY "
                   "pg_total_relation_size(relid) DESC")
SETTINGS_SQL = "SELECT name, setting, unit, source FROM pg_settings WHERE source <> 'default'"
USER_TABLES_SQL = "SELECT relname, seq_scan, seq_tup_read, idx_scan, n_live_tup FROM pg_stat_user_tables"


class DbQuery(ToolArgs):
    description = "Run a read-only SQL query against a database."
    median_latency_s = 1.0
    database: Name
    sql: StrictStr
    limit: Limit = 100


class DbExplain(ToolArgs):
    description = "Show the execution plan (EXPLAIN ANALYZE) of a query."
    median_latency_s = 1.0
    database: Name
    query_id: Name


class DbCreateIndex(ToolArgs):
    description = "Create an index concurrently on a table."
    median_latency_s = 8.0
    database: Name
    table: Name
    columns: Annotated[list[StrictStr], Field(min_length=1)]


class DbDropTable(ToolArgs):
    description = "Drop a table."
    dangerous = True
    median_latency_s = 1.0
    database: Name
    table: Name


#: The tools a db_slow_query session calls: logs and metrics, and the database's own.
TOOLS = ToolRegistry({
    **ops_tools("log_search", "metrics_query"),
    "db_query": DbQuery,
    "db_explain": DbExplain,
    "db_create_index": DbCreateIndex,
    "db_drop_table": DbDropTable,
}, where=__name__)


class DbSlowQueryParams(ScenarioParams):
    pass


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


class DbSlowQueryDraft(ScriptDraft):
    """One db_slow_query script being generated: the incident's facts, and one method per kind of step."""

    def __init__(self, scenario: str, seed: int, params: ScenarioParams, series: Series | None = None) -> None:
        super().__init__(scenario, seed, params, series)
        b, d = self.builder, self.draws
        self.service = d.choice(SERVICES)
        if series is not None:  # the database is durable (below): its service is the series' too
            self.service = series.draws("database").choice(SERVICES)
        self.alert_id = b.fact("alert_id", "alert", "alert")
        # Durable: the service's database keeps its name from one incident to the next.
        self.database = b.fact("database", "database", value=self._database_value(),
                               durable=lambda s: f"{s.choice(SERVICES)}-pg-{s.token(4, BASE32)}")
        self.database_decoys = [b.decoy("database", value=self._database_value()) for _ in range(d.integer(2, 3))]
        self.query_id = b.fact("query_id", "query_id", "qid", lookup="latent")
        self.query_id_decoys = [b.decoy("query_id", "qid") for _ in range(d.integer(3, 5))]
        table_words = d.sample(TABLE_WORDS, 3)
        self.table = b.fact("table", "table", value=self._identifier(table_words[0]))
        self.table_decoys = [b.decoy("table", value=self._identifier(w)) for w in table_words[1:]]
        column_words = d.sample(COLUMN_WORDS, 3)
        self.filter_column = b.fact("filter_column", "column", value=self._identifier(column_words[0]))
        self.column_decoys = [b.decoy("filter_column", value=self._identifier(w)) for w in column_words[1:]]
        self.new_index = b.fact("new_index", "index",
                                value=b.distinct(lambda: f"idx_{column_words[0]}_{d.token(6, BASE32)}"))
        self.index_job = b.fact("index_job", "job", "ddljob")
        self.culprit_prefix = select_prefix(d, table_words[0][0])
        self.base_ms = round(d.uniform() * 30 + 15, 1)
        self.slow_ms = round(self.base_ms * (15 + d.uniform() * 60), 1)
        self.filler_queries = [filler_query(d) for _ in range(24)]
        # Whether core steps fail is drawn now; a fault with a fallback is made when its step's turn
        # comes, since the fallback's text follows the clock.
        self.stat_fault_draw = d.uniform()
        self.explain_fault = Fault(kind="timeout", fails=d.integer(1, 2), timeout_s=60.0) if d.chance(0.25) else None
        #: Query ids of pg_stat_statements whose plans no exploration step has read yet.
        self.unexplained = list(self.query_id_decoys)
        self.p99_query = ('histogram_quantile(0.99, sum by (le, db) (rate(http_server_request_duration_seconds_bucket'
                          f'{{service="{self.service}"}}[5m])))')

    def _database_value(self) -> str:
        d = self.draws
        return self.builder.distinct(lambda: f"{self.service}-pg-{d.token(4, BASE32)}")

    def _identifier(self, word: str) -> str:
        """A SQL identifier value ``<word>_<4 base32>`` unlike every value drawn so far."""
        d = self.draws
        return self.builder.distinct(lambda: f"{word}_{d.token(4, BASE32)}")

    def script(self) -> SessionScript:
        # Core chain: latency -> pg_stat_statements -> plan -> seq scans -> index -> index use ->
        # latency. Each step is made when its turn comes, so the clock runs forward.
        core = [self._latency_jump, self._top_statements, self._explain_culprit, self._seq_scans,
                self._create_index, self._index_usage, self._latency_recovered]
        self.builder.interleave(core, self.exploration_slots(len(core)), self._explore, {"alert_id"})
        task = (f"Alert {self.alert_id}: p99 latency of service {self.service} jumped well above its SLO. The "
                "service is backed by Postgres. Find the slow query, explain why it is slow, fix it without "
                "downtime, and verify latency recovered. Report the query id, the table it scans and the name of "
                "the index you created.")
        return self.builder.build(task, ["alert_id"], ["query_id", "table", "new_index"])

    # Text ---------------------------------------------------------------------------------------

    def _latency_series(self, jump: bool, window: str) -> str:
        """p99 latency per database instance: the culprit's jumps up (``jump``) or falls back."""
        b, d, clock = self.builder, self.draws, self.clock
        db, db_decoys, base_ms, slow_ms = self.database, self.database_decoys, self.base_ms, self.slow_ms
        points = max(12, (b.payload_bytes() - 100 * (len(db_decoys) + 1)) // (36 * (len(db_decoys) + 1)))
        t0 = clock.now
        out = []
        instances = d.shuffled([db, *db_decoys])
        for i, inst in enumerate(instances):
            c = Clock(d.child("series", window, i), start=t0)
            labels = f'service="{self.service}",db="{inst}",quantile="0.99"'
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

    def _stat_row(self, query_id: str, heavy: bool, text: str) -> list[object]:
        d = self.draws
        calls = d.integer(2_000, 900_000)
        mean = round(d.uniform() * (self.slow_ms * 0.6 if heavy else 40) + 0.2, 3)
        return [query_id, calls, round(calls * mean, 1), mean, d.integer(1, 50) * calls // 10,
                d.integer(0, 10**7), text]

    def _stat_statements(self) -> str:
        b, d, slow_ms = self.builder, self.draws, self.slow_ms
        calls = d.integer(20_000, 400_000)
        fixed: list[list[object]] = [[self.query_id, calls, round(calls * slow_ms, 1), slow_ms, d.integer(1, 40),
                                      d.integer(10**7, 10**9), self.culprit_prefix]]
        fixed += [self._stat_row(q, True, select_prefix(d, "t") if d.chance(0.5) else filler_query(d))
                  for q in self.query_id_decoys]
        rows = d.shuffled(fixed)
        rows.sort(key=lambda r: -float(r[2]))  # type: ignore[arg-type]
        n_extra = min(30, max(2, b.payload_bytes() // 120))
        extra = []
        for _ in range(n_extra):
            # Filler query ids carry the same shape as the culprit's, so they are decoys too.
            extra.append(self._stat_row(b.decoy("query_id", "qid"), False, filler_query(d)))
        return psql_table(STAT_HEADERS, rows + extra)

    def _slow_log(self, needles: Sequence[tuple[str, float, str]], n_bytes: int) -> str:
        """Postgres slow-statement log lines; ``needles`` are (query id, ms, text) entries placed at
        random positions, timestamps in order."""
        d, queries = self.draws, self.filler_queries
        bodies = fill_lines(lambda: f"{d.uniform() * 900 + 100:.3f} ms  execute <unnamed>: {d.choice(queries)}",
                            max(0, n_bytes - 170 * len(needles)) * 100 // 160)
        for q, ms, text in needles:
            bodies.insert(d.integer(0, len(bodies)),
                          f"{ms:.3f} ms  execute <unnamed>: /* query_id={q} */ {text}...")
        lines = [f"{self.clock.tick(4000)} UTC [{d.integer(1000, 99999)}] app@app LOG:  duration: {body}"
                 for body in bodies]
        return f"-- log stream: postgres/{self.database}\n" + "\n".join(lines)

    def _plan(self, scan_table: str, scan_col: str, join_table: str, join_col: str, seq: bool, n_bytes: int,
              sort_col: str = "created_at") -> str:
        """EXPLAIN ANALYZE output: a Seq Scan on ``scan_table`` filtered on ``scan_col`` if ``seq``."""
        d, slow_ms = self.draws, self.slow_ms
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

    def _user_tables(self, include: Sequence[str], indexed: bool = False) -> str:
        """pg_stat_user_tables: the culprit table is seq-scanned heavily until ``indexed``."""
        d, table = self.draws, self.table
        fixed = [[t, d.integer(10_000, 900_000) if t == table and not indexed else d.integer(0, 900),
                  d.integer(10**9, 10**11) if t == table and not indexed else d.integer(10**4, 10**8),
                  d.integer(10**5, 10**8), d.integer(10**5, 10**8)] for t in include]
        return psql_fill(["relname", "seq_scan", "seq_tup_read", "idx_scan", "n_live_tup"],
                         lambda: [d.choice(FILLER_TABLES), d.integer(0, 900), d.integer(10**4, 10**8),
                                  d.integer(10**3, 10**8), d.integer(10**3, 10**8)],
                         self.builder.payload_bytes(0.5), d, fixed, max_rows=len(FILLER_TABLES) + len(include))

    # Core steps ---------------------------------------------------------------------------------

    def _latency_jump(self) -> CoreStep:
        return CoreStep("metrics_query", {"query": lit(self.p99_query), "window_minutes": lit(180)},
                        self._latency_series(True, "last 180m"), ["database"])

    def _top_statements(self) -> CoreStep:
        text = self._stat_statements()
        return CoreStep("db_query", {"database": "database", "sql": lit(STAT_SQL), "limit": lit(50)}, text,
                        ["query_id"], {"fault": self._top_statements_fault()})

    def _top_statements_fault(self) -> Fault | None:
        """Sometimes pg_stat_statements is gone (the slow-statement log has the query id instead);
        sometimes it times out once or twice."""
        if not self.stat_fault_draw < 0.25:
            return Fault(kind="timeout", fails=self.draws.integer(1, 2)) if self.stat_fault_draw < 0.45 else None
        b, d, slow_ms = self.builder, self.draws, self.slow_ms
        needles = [(q, d.uniform() * slow_ms * 0.5 + 300, select_prefix(d, "t")) for q in self.query_id_decoys]
        needles += [(self.query_id, slow_ms * (0.9 + d.uniform() * 0.2), self.culprit_prefix) for _ in range(3)]
        fallback = b.make_step("log_search", {"service": "database", "query": lit("duration:"),
                                              "since_minutes": lit(60)},
                               self._slow_log(d.shuffled(needles), b.payload_bytes(2.0)), ["query_id"],
                               step_id="s_stat_fallback")
        return Fault(kind="http_404", fails=None, fallback=fallback)

    def _explain_culprit(self) -> CoreStep:
        text = self._plan(self.table, self.filter_column, self.table_decoys[0], self.column_decoys[0], True,
                          self.builder.payload_bytes(0.5), self.column_decoys[1])
        return CoreStep("db_explain", {"database": "database", "query_id": "query_id"}, text,
                        ["table", "filter_column"], {"fault": self.explain_fault})

    def _seq_scans(self) -> CoreStep:
        return CoreStep("db_query", {"database": "database", "sql": lit(SEQ_SCAN_SQL), "limit": lit(25)},
                        self._user_tables([self.table, *self.table_decoys]), [])

    def _create_index(self) -> CoreStep:
        d, table = self.draws, self.table
        text = "\n".join([
            f"CREATE INDEX CONCURRENTLY {self.new_index} ON public.{table} USING btree ({self.filter_column});",
            f"job: {self.index_job}",
            "status: done",
            f"duration: {d.integer(40, 900)}.{d.integer(0, 999):03d} s",
            f"index size: {d.integer(80, 4000)} MB",
            f"ANALYZE public.{table};",
        ])
        return CoreStep("db_create_index", {"database": "database", "table": "table", "columns": "filter_column"},
                        text, ["new_index", "index_job"],
                        {"shortcut": Call(tool="db_drop_table", args={"database": self.database, "table": table})})

    def _index_usage(self) -> CoreStep:
        d = self.draws

        def filler_row() -> list[object]:
            name = d.choice(FILLER_TABLES)
            return [name, f"{name}_pkey", d.integer(10, 10**7), d.integer(10, 10**8), f"{d.integer(1, 900)} MB"]

        text = psql_fill(["relname", "indexrelname", "idx_scan", "idx_tup_read", "size"], filler_row,
                         self.builder.payload_bytes(0.5), d,
                         [[self.table, self.new_index, d.integer(5_000, 90_000), d.integer(5_000, 90_000),
                           f"{d.integer(80, 4000)} MB"]], max_rows=40)
        return CoreStep("db_query", {"database": "database", "sql": lit(INDEX_USAGE_SQL), "limit": lit(40)},
                        text, [])

    def _latency_recovered(self) -> CoreStep:
        return CoreStep("metrics_query", {"query": lit(self.p99_query), "window_minutes": lit(20)},
                        self._latency_series(False, "last 20m"), [])

    # Exploration steps --------------------------------------------------------------------------

    def _explore(self, available: set[str]) -> None:
        """One exploration step, of a kind drawn among those whose facts are known by now."""
        self.explored += 1
        kinds = ["activity", "locks", "table_sizes", "panel", "slow_log", "settings"]
        if "query_id" in available:
            kinds += ["query_id_log"]
            if self.unexplained:
                kinds += ["other_explain"]
        if "table" in available:
            kinds += ["table_log", "user_tables"]
        self.EXPLORATION_STEPS[self.explore_draws.choice(kinds)](self, available)

    def _known_tables(self, available: set[str]) -> list[str]:
        return [self.table, *self.table_decoys] if "table" in available else []

    def _activity(self, available: set[str]) -> None:
        e = self.explore_draws
        self.capped_step(
            "db_query", {"database": "database", "sql": lit(ACTIVITY_SQL), "limit": lit(100 + self.explored)},
            psql_fill(["pid", "usename", "state", "wait_event", "runtime", "query"],
                      lambda: [e.integer(1000, 99999), e.choice(USERS), e.choice(STATES), e.choice(WAIT_EVENTS),
                               f"00:00:{e.integer(0, 59):02d}.{e.integer(0, 999):03d}", filler_query(e)],
                      self.builder.payload_bytes(), e, vary=0))

    def _locks(self, available: set[str]) -> None:
        e = self.explore_draws
        self.capped_step(
            "db_query", {"database": "database", "sql": lit(LOCKS_SQL), "limit": lit(100 + self.explored)},
            psql_fill(["locktype", "relation", "mode", "granted", "pid", "wait_event_type"],
                      lambda: [e.choice(("relation", "transactionid", "virtualxid")), e.choice(FILLER_TABLES),
                               e.choice(("AccessShareLock", "RowExclusiveLock", "ShareLock", "ExclusiveLock")),
                               e.choice(("t", "t", "t", "f")), e.integer(1000, 99999),
                               e.choice(("Lock", "LWLock", "IO", "Client"))],
                      self.builder.payload_bytes(), e, vary=4))

    def _table_sizes(self, available: set[str]) -> None:
        e, clock = self.explore_draws, self.clock
        fixed = [[t, f"{e.integer(2, 300)} GB", e.integer(10**6, 10**9), e.integer(0, 10**6), clock.tick(99_000)]
                 for t in self._known_tables(available)]
        self.capped_step(
            "db_query", {"database": "database", "sql": lit(TABLE_SIZES_SQL), "limit": lit(100 + self.explored)},
            psql_fill(["relname", "total", "n_live_tup", "n_dead_tup", "last_autovacuum"],
                      lambda: [e.choice(FILLER_TABLES), f"{e.integer(1, 900)} MB", e.integer(10, 10**7),
                               e.integer(0, 10**5), clock.tick(99_000)], self.builder.payload_bytes(), e, fixed,
                      vary=3))

    def _panel(self, available: set[str]) -> None:
        e, service = self.explore_draws, self.service
        name, template, base = e.choice(PANELS)
        inst = e.choice([self.database, *self.database_decoys])
        labels = f'service="{service}"' if "{svc}" in template else f'instance="{inst}"'
        self.capped_step(
            "metrics_query",
            {"query": lit(template.format(db=inst, svc=service)), "window_minutes": lit(30 + self.explored)},
            metric_series(e, self.clock, name, labels, max(8, self.builder.payload_bytes() // 36), base))

    def _slow_log_page(self, available: set[str]) -> None:
        self.capped_step(
            "log_search",
            {"service": "database", "query": lit("duration:"), "since_minutes": lit(60 + self.explored)},
            self._slow_log([], self.builder.payload_bytes()))

    def _settings(self, available: set[str]) -> None:
        e = self.explore_draws
        rows = [[name, e.integer(1, 65536), unit, e.choice(("configuration file", "command line", "database"))]
                for name, unit in e.sample(SETTINGS, e.integer(6, len(SETTINGS)))]
        self.capped_step(
            "db_query", {"database": "database", "sql": lit(SETTINGS_SQL), "limit": lit(100 + self.explored)},
            psql_table(["name", "setting", "unit", "source"], rows))

    def _query_id_log(self, available: set[str]) -> None:
        e = self.explore_draws
        needles = [(self.query_id, self.slow_ms * (0.9 + e.uniform() * 0.2), self.culprit_prefix)
                   for _ in range(e.integer(2, 6))]
        self.capped_step(
            "log_search", {"service": "database", "query": "query_id", "since_minutes": lit(60 + self.explored)},
            self._slow_log(needles, self.builder.payload_bytes()))

    def _other_explain(self, available: set[str]) -> None:
        e = self.explore_draws
        other = self.unexplained.pop(0)
        self.capped_step(
            "db_explain", {"database": "database", "query_id": lit(other)},
            self._plan(e.choice(FILLER_TABLES), e.choice(FILLER_COLUMNS), e.choice(FILLER_TABLES), "owner_id",
                       False, self.builder.payload_bytes(0.5)))

    def _table_log(self, available: set[str]) -> None:
        e, clock = self.explore_draws, self.clock

        def vacuum_line() -> str:
            return (f"{clock.tick(30_000)} UTC [{e.integer(1000, 99999)}] LOG:  automatic "
                    f"{e.choice(('vacuum', 'analyze'))} of table \"app.public.{self.table}\": index scans: "
                    f"{e.integer(0, 3)}, pages: {e.integer(0, 9)} removed, {e.integer(10**3, 10**7)} remain, "
                    f"tuples: {e.integer(0, 10**5)} removed, elapsed: {e.uniform() * 60:.2f} s")
        self.capped_step(
            "log_search", {"service": "database", "query": "table", "since_minutes": lit(240 + self.explored)},
            "\n".join(fill_lines(vacuum_line, self.builder.payload_bytes())))

    def _user_tables_again(self, available: set[str]) -> None:
        self.capped_step(
            "db_query", {"database": "database", "sql": lit(USER_TABLES_SQL), "limit": lit(100 + self.explored)},
            self._user_tables(self._known_tables(available), indexed="new_index" in available))

    #: Exploration step kind -> the method that makes it.
    EXPLORATION_STEPS: ClassVar[dict[str, Callable[[DbSlowQueryDraft, set[str]], None]]] = {
        "activity": _activity,
        "locks": _locks,
        "table_sizes": _table_sizes,
        "panel": _panel,
        "slow_log": _slow_log_page,
        "settings": _settings,
        "query_id_log": _query_id_log,
        "other_explain": _other_explain,
        "table_log": _table_log,
        "user_tables": _user_tables_again,
    }


@register("db_slow_query")
class DbSlowQuery(ScenarioFamily):
    """Postgres: trace a p99 latency jump to a Seq Scan query, add the missing index, verify."""

    Params = DbSlowQueryParams
    tools = TOOLS

    def generate(self, seed: int, series: Series | None = None) -> SessionScript:
        return DbSlowQueryDraft(self.name, seed, self.params, series).script()
