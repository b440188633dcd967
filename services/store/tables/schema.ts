import type { Migration } from "../migrations.js";

/**
 * Tables of the tables module. Everything here is content-addressed, so a row written twice
 * (two requests, a retry) is the same row: ReplacingMergeTree collapses the copies when it
 * merges, and reads never depend on that having happened (they take any one copy).
 *
 * - `table_rows`: one row per distinct table row of a project, shared by every table that
 *   holds it. `val` is its JSON text as the API answers it (compact, keys in the order sent,
 *   floats written as floats); `row_key` a 64-bit key of its digest (rowKey in tableRows.ts),
 *   the join key of the other tables (joins on a UInt64 are several times faster than on the
 *   43-character digest); `size_bytes` the UTF-8 bytes of `val`. Granules of 64 rows: a page
 *   reads ~100 rows scattered over the project, and each costs its whole granule (with the
 *   default 8,192 rows of ~1 KB, a page of a 100,000-row table read every row's text).
 * - `table_row_leaves`: the rows' JSON leaves flattened as calls flatten theirs (paths
 *   `val.<key>...`, at most 1,000 leaves of at most 4,096 characters per row), one row per
 *   leaf, ordered by path: sorting a table by a row field reads only that field's leaves,
 *   never the rows' text. A row's leaves are written before the row, so a row that exists
 *   has its leaves.
 * - `table_positions`: the rows of each table in order, one row per position (`idx` from 0):
 *   a page in table order is a primary-key range, and no table's row list is ever read into
 *   the service whole. Each write of a table's positions has its own random `generation`;
 *   reads take only the generation its `tables` row names, so they need no FINAL (which cost
 *   more than half of a sorted page) and never see a second copy, a partial write, or the
 *   positions of a create refused after writing them.
 * - `tables`: one row per table, written last, after its positions: a table exists (reads
 *   and stats find it) once this row does. Two concurrent creates of one table each commit
 *   a complete generation; reads take either.
 */
export const TABLES_MIGRATION: Migration = {
  version: 12,
  name: "tables",
  statements: [
    `CREATE TABLE IF NOT EXISTS table_rows (
      project_id String,
      digest String,
      row_key UInt64,
      val String,
      size_bytes UInt64,
      created_at Int64
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, digest)
    SETTINGS index_granularity = 64`,
    `CREATE TABLE IF NOT EXISTS table_row_leaves (
      project_id String,
      path String,
      row_key UInt64,
      value String
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, path, row_key)`,
    `CREATE TABLE IF NOT EXISTS table_positions (
      project_id String,
      table_digest String,
      generation UInt64,
      idx UInt64,
      row_digest String,
      row_key UInt64
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, table_digest, generation, idx)`,
    `CREATE TABLE IF NOT EXISTS tables (
      project_id String,
      digest String,
      row_count UInt64,
      generation UInt64,
      created_at Int64
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, digest)`,
  ],
};

/** Bytes of a leaf's text kept as its sort prefix (sortedPage.ts). */
export const SORT_PREFIX_BYTES = 64;

/**
 * Short sort keys of the rows' leaves, so that the first pages of a sorted table query read
 * a few bytes per row instead of every row's leaf text (sortedPage.ts): per leaf, the number
 * its text reads as (`toFloat64OrNull`, as the one sort orders numbers) and the first
 * SORT_PREFIX_BYTES bytes of the text. A materialized view writes them with every insert
 * into `table_row_leaves`; the INSERT ... SELECT fills them for leaves stored before this
 * migration (a start racing another repeats it: the copies are identical rows, which the
 * reads take once).
 */
export const TABLE_SORT_KEYS_MIGRATION: Migration = {
  version: 13,
  name: "table_row_sort_keys",
  statements: [
    `CREATE TABLE IF NOT EXISTS table_row_sort_keys (
      project_id String,
      path String,
      row_key UInt64,
      sort_number Nullable(Float64),
      sort_prefix String
    ) ENGINE = ReplacingMergeTree()
    ORDER BY (project_id, path, row_key)`,
    `CREATE MATERIALIZED VIEW IF NOT EXISTS table_row_sort_keys_writer TO table_row_sort_keys AS
      SELECT project_id, path, row_key, toFloat64OrNull(value) AS sort_number, substring(value, 1, ${SORT_PREFIX_BYTES}) AS sort_prefix
      FROM table_row_leaves`,
    `INSERT INTO table_row_sort_keys (project_id, path, row_key, sort_number, sort_prefix)
      SELECT project_id, path, row_key, toFloat64OrNull(value), substring(value, 1, ${SORT_PREFIX_BYTES}) FROM table_row_leaves`,
  ],
};
