import type { ClickHouseStore } from "./clickhouse.js";
import { COSTS_MIGRATION } from "./costs/schema.js";
import { FEEDBACK_MIGRATION } from "./feedback/schema.js";
import { JOBS_MIGRATION } from "./jobs/schema.js";
import { THREADS_MIGRATION } from "./threads/schema.js";

/**
 * Versioned schema migrations. Every statement is idempotent (IF NOT EXISTS), so running
 * them at every start, from several processes at once, is safe: a race only repeats
 * no-ops. The applied versions are recorded in `schema_migrations` for operators.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly string[];
}

const MONTH_OF_STARTED_AT = "toYYYYMM(toDateTime(intDiv(started_at, 1000000)))";

const CALLS_MIGRATION: Migration = {
    version: 1,
    name: "calls",
    statements: [
      // One row per version of a call; the worker writes a new whole row whenever a part
      // arrives, and ReplacingMergeTree keeps the highest version. The sort key never changes
      // between versions of one call (a call gets a row only once its start is known), so
      // reads can use FINAL on a narrow started_at range.
      `CREATE TABLE IF NOT EXISTS calls (
        project_id String,
        id String,
        trace_id String,
        parent_id Nullable(String),
        thread_id Nullable(String),
        turn_id Nullable(String),
        op_name String,
        display_name Nullable(String),
        started_at Int64,
        ended_at Nullable(Int64),
        exception Nullable(String),
        attributes String,
        inputs String,
        output Nullable(String),
        summary Nullable(String),
        otel_dump Nullable(String),
        wb_user_id Nullable(String),
        wb_run_id Nullable(String),
        wb_run_step Nullable(Int64),
        wb_run_step_end Nullable(Int64),
        json_paths Array(String),
        json_values Array(String),
        storage_size_bytes UInt64,
        version UInt64
      ) ENGINE = ReplacingMergeTree(version)
      PARTITION BY ${MONTH_OF_STARTED_AT}
      ORDER BY (project_id, started_at, id)`,
      // Where a call lives: lets the worker and /call/read find a call by id without
      // scanning, and holds the parent links that deletes walk.
      `CREATE TABLE IF NOT EXISTS call_index (
        project_id String,
        id String,
        started_at Int64,
        trace_id String,
        parent_id Nullable(String)
      ) ENGINE = ReplacingMergeTree()
      ORDER BY (project_id, id)`,
      // Ends and updates that arrived before their call's start, applied when it comes.
      `CREATE TABLE IF NOT EXISTS call_orphan_parts (
        project_id String,
        id String,
        received_at Int64,
        event String
      ) ENGINE = MergeTree()
      ORDER BY (project_id, id)`,
      `CREATE TABLE IF NOT EXISTS call_deletions (
        project_id String,
        id String,
        deleted_at Int64,
        wb_user_id String
      ) ENGINE = ReplacingMergeTree()
      ORDER BY (project_id, id)`,
      // Per-project time range and row count: sizes the first time window of a sorted read.
      `CREATE TABLE IF NOT EXISTS project_call_bounds (
        project_id String,
        min_started_at AggregateFunction(min, Int64),
        max_started_at AggregateFunction(max, Int64),
        row_count AggregateFunction(count)
      ) ENGINE = AggregatingMergeTree()
      ORDER BY project_id`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS project_call_bounds_mv TO project_call_bounds AS
      SELECT project_id, minState(started_at) AS min_started_at, maxState(started_at) AS max_started_at,
             countState() AS row_count
      FROM calls GROUP BY project_id`,
    ],
};

/** Every module's migration, in version order. */
export const MIGRATIONS: readonly Migration[] = [CALLS_MIGRATION, THREADS_MIGRATION, COSTS_MIGRATION, FEEDBACK_MIGRATION, JOBS_MIGRATION];

export async function migrate(store: ClickHouseStore, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  await store.command("migrate_bootstrap", {
    sql: `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime DEFAULT now())
          ENGINE = ReplacingMergeTree() ORDER BY version`,
    params: {},
  });
  const done = new Set(
    (await store.rows<{ version: number }>("migrate_applied", { sql: "SELECT DISTINCT version FROM schema_migrations", params: {} })).map(
      (r) => Number(r.version),
    ),
  );
  const applied: number[] = [];
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    for (const statement of migration.statements) await store.command(`migrate_${migration.version}`, { sql: statement, params: {} });
    await store.insert("migrate_record", "schema_migrations", [{ version: migration.version, name: migration.name }]);
    applied.push(migration.version);
  }
  return applied;
}

export async function ensureDatabase(url: string, database: string): Promise<void> {
  const { ClickHouseStore } = await import("./clickhouse.js");
  const root = new ClickHouseStore(url, "default");
  try {
    await root.command("create_database", { sql: `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(database)}`, params: {} });
  } finally {
    await root.close();
  }
}

function quoteIdentifier(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`invalid database name: ${name}`);
  return name;
}
