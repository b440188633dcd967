import type { Migration } from "../migrations.js";

const MONTH_OF_STARTED_AT = "toYYYYMM(toDateTime(intDiv(started_at, 1000000)))";

export const CALLS_MIGRATION: Migration = {
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

/**
 * Leaves cut to MAX_LEAF_CHARS (flatten.ts) are listed with a hash of their whole value, so
 * that `$eq` on a long value is exact. Rows written before have empty lists: a long value
 * there is found by no `$eq`, as before.
 */
export const CALLS_LONG_LEAVES_MIGRATION: Migration = {
  version: 24,
  name: "calls_long_leaves",
  statements: [],
  columns: [
    { table: "calls", column: "json_long_paths", type: "Array(String)" },
    { table: "calls", column: "json_long_hashes", type: "Array(String)" },
  ],
};

/**
 * A call's `json_paths` repeat from row to row (the same keys in call after call), and
 * ClickHouse's cost of storing a row follows its bytes, in the insert and in every merge.
 * As LowCardinality, each part keeps each distinct path once and a row only its numbers;
 * queries read the column as before. ClickHouse 18.16 converts the column of every stored
 * part during the ALTER (docs/benchmarks.md, "Paths of the flattened leaves kept once a part").
 */
export const CALLS_PATHS_ONCE_MIGRATION: Migration = {
  version: 49,
  name: "calls_paths_once",
  statements: [],
  columns: [{ table: "calls", column: "json_paths", type: "Array(LowCardinality(String))" }],
};

/**
 * An OTLP span's resource and scope, once per project and distinct pair (spanResources.ts):
 * the text a span's attributes lack, and its leaves as a call's (flatten.ts), which filters
 * and sorts on `attributes.otel.resource.…` and `.scope.…` read (spanResourceFields.ts). A
 * call's row names its pair by `resource_hash` ('' when its attributes are stored whole, as
 * are all rows written before).
 */
export const SPAN_RESOURCES_MIGRATION: Migration = {
  version: 51,
  name: "span_resources",
  statements: [
    `CREATE TABLE IF NOT EXISTS span_resources (
      project_id String,
      hash String,
      text String,
      json_paths Array(String),
      json_values Array(String),
      json_long_paths Array(String),
      json_long_hashes Array(String)
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, hash)`,
  ],
  columns: [{ table: "calls", column: "resource_hash", type: "String" }],
};
