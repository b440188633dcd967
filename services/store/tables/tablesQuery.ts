import { MAX_JSON_DEPTH } from "../calls/flatten.js";
import { composeFields, keyPathSegments, type Field, type FieldSet } from "../expr/fields.js";
import { orderByTerms, type Sort } from "../expr/sort.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { LEAF_ROOT } from "./tableRows.js";

/**
 * SQL of the tables module (schema.ts). Every value is bound through the ParamBuilder.
 * Row lists never travel as SQL text: positions are inserted as RowBinary and copied from
 * table to table by INSERT ... SELECT.
 */

const built = (pb: ParamBuilder, sql: string): BuiltQuery => ({ sql, params: pb.params });

/** A table as stored: its digest and the generation of positions its `tables` row names (schema.ts). */
export interface StoredTable {
  readonly projectId: string;
  readonly digest: string;
  readonly generation: bigint;
}

/** The positions of one table: the start of a WHERE clause over `table_positions`. */
function positionsOf(table: StoredTable, pb: ParamBuilder): string {
  return `project_id = ${pb.str(table.projectId)} AND table_digest = ${pb.str(table.digest)} AND generation = ${pb.add(table.generation, "UInt64")}`;
}

/** The table's row count and generation; no row when the table does not exist. */
export function storedTableQuery(projectId: string, digest: string): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT toString(any(row_count)) AS row_count, toString(any(generation)) AS generation FROM tables
    WHERE project_id = ${pb.str(projectId)} AND digest = ${pb.str(digest)} GROUP BY digest`);
}

/** Which of these row digests (at most IDS_PER_QUERY) the project already stores. */
export function storedRowsQuery(projectId: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT DISTINCT digest FROM table_rows
    WHERE project_id = ${pb.str(projectId)} AND digest IN ${pb.inStrings(digests)}`);
}

/** Up to `limit` row digests a table's positions name that the project does not store. */
export function missingRowsQuery(table: StoredTable, limit: number): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT DISTINCT row_digest FROM table_positions
    WHERE ${positionsOf(table, pb)}
      AND row_key NOT IN (SELECT row_key FROM table_rows WHERE project_id = ${pb.str(table.projectId)})
    LIMIT ${pb.count(limit)}`);
}

/** A table's row digests in order (streamed: the base of an update). */
export function rowDigestsInOrderQuery(table: StoredTable): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT row_digest FROM table_positions WHERE ${positionsOf(table, pb)} ORDER BY idx`);
}

/** The row digests at these positions (at most IDS_PER_QUERY) of a table. */
export function rowDigestsAtQuery(table: StoredTable, positions: readonly number[]): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT toString(idx) AS position, row_digest FROM table_positions
    WHERE ${positionsOf(table, pb)} AND toInt64(idx) IN ${pb.inInts(positions)}`);
}

/** A run of a base table's positions kept by an update: [from, to) moves to start at `at`. */
export interface KeptRange {
  readonly from: number;
  readonly to: number;
  readonly at: number;
}

/**
 * Copies the kept ranges of a base table's positions to a new table, shifted, in ClickHouse.
 * The ranges are ascending and disjoint; each position finds its range as the first whose
 * end lies beyond it.
 */
export function copyPositionsSql(base: StoredTable, target: StoredTable, ranges: readonly KeptRange[]): BuiltQuery {
  const pb = new ParamBuilder();
  const froms = pb.add(ranges.map((r) => r.from), "Array(Int64)");
  const tos = pb.add(ranges.map((r) => r.to), "Array(Int64)");
  const ats = pb.add(ranges.map((r) => r.at), "Array(Int64)");
  return built(pb, `INSERT INTO table_positions (project_id, table_digest, generation, idx, row_digest, row_key)
    SELECT project_id, ${pb.str(target.digest)}, ${pb.add(target.generation, "UInt64")},
      toUInt64(arrayElement(${ats}, k) + toInt64(idx) - arrayElement(${froms}, k)), row_digest, row_key
    FROM (
      SELECT project_id, idx, row_digest, row_key, arrayFirstIndex(e -> e > toInt64(idx), ${tos}) AS k
      FROM table_positions WHERE ${positionsOf(base, pb)}
    )
    WHERE k > 0 AND toInt64(idx) >= arrayElement(${froms}, k)`);
}

/** What a table query asks: its rows filtered, sorted by row fields, paged. */
export interface TablePageSpec {
  readonly table: StoredTable;
  readonly rowDigests?: readonly string[] | null;
  readonly sortBy?: readonly Sort[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
}

/**
 * The positions of a table's rows a query answers, in answer order: `row_digest`, `idx`.
 *
 * Table order (no sort) without a filter is a primary-key range of `table_positions`. A sort
 * by row fields joins each field's leaves (`table_row_leaves`, read by path, keyed by the
 * 64-bit row key) to the positions and orders by them with the one sort (store/expr/sort.ts:
 * numbers numerically first, then text; absent fields last), then by position. The rows'
 * text is read afterwards, only for the rows of the page (rowValuesQuery).
 */
export function tablePositionsQuery(spec: TablePageSpec): BuiltQuery {
  const pb = new ParamBuilder();
  const sorts = spec.sortBy ?? [];
  // As in Weave, an empty list of row digests filters nothing.
  const filtered = spec.rowDigests && spec.rowDigests.length > 0 ? spec.rowDigests : null;
  const filter = filtered ? ` AND row_digest IN ${pb.inStrings(filtered)}` : "";
  const positions = `SELECT row_digest, row_key, idx FROM table_positions WHERE ${positionsOf(spec.table, pb)}${filter}`;
  if (sorts.length === 0 && !filtered) {
    const from = spec.offset ?? 0;
    const range = (from > 0 ? ` AND idx >= ${pb.count(from)}` : "") + (spec.limit != null ? ` AND idx < ${pb.count(from + spec.limit)}` : "");
    return built(pb, `SELECT row_digest, toString(idx) AS position FROM (${positions}${range}) ORDER BY idx`);
  }
  const leaves = rowLeafFields();
  const terms = orderByTerms(sorts, composeFields(leaves.set), pb);
  const project = pb.str(spec.table.projectId);
  const joined = leaves.paths.reduce(
    (inner, path, i) => `SELECT * FROM (${inner}) AS rows_${i} ANY LEFT JOIN (
      SELECT row_key, toUInt8(1) AS has_${i}, value AS leaf_${i} FROM table_row_leaves
      WHERE project_id = ${project} AND path = ${pb.str(path)}) AS leaves_${i} USING row_key`,
    positions,
  );
  return built(pb, `SELECT row_digest, toString(idx) AS position FROM (${joined})
    ORDER BY ${[...terms, "idx ASC"].join(", ")} ${pb.limitOffset(spec.limit, spec.offset)}`);
}

/**
 * Sort fields of table rows: a path inside the row (`question`, `meta.score`) names the
 * leaf `val.<path>` (tableRows.ts). Each field named becomes one joined leaf column; the set
 * remembers the leaf paths in the order their columns were numbered.
 */
function rowLeafFields(): { set: FieldSet; paths: string[] } {
  const paths: string[] = [];
  const set: FieldSet = {
    name: "row fields",
    known: ["<path inside the row>"],
    resolve(path): Field {
      keyPathSegments(path, MAX_JSON_DEPTH, path);
      const leafPath = `${LEAF_ROOT}.${path}`;
      let i = paths.indexOf(leafPath);
      if (i < 0) i = paths.push(leafPath) - 1;
      return { sql: `if(has_${i} = 1, leaf_${i}, NULL)`, kind: "json_leaf", nullable: true };
    },
  };
  return { set, paths };
}

/** The text of these rows (at most IDS_PER_QUERY digests). */
export function rowValuesQuery(projectId: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT digest, any(val) AS val FROM table_rows
    WHERE project_id = ${pb.str(projectId)} AND digest IN ${pb.inStrings(digests)} GROUP BY digest`);
}

/** Row counts of these tables (at most IDS_PER_QUERY); unknown ones have no row. */
export function tableCountsQuery(projectId: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  return built(pb, `SELECT digest, toString(any(row_count)) AS row_count FROM tables
    WHERE project_id = ${pb.str(projectId)} AND digest IN ${pb.inStrings(digests)} GROUP BY digest`);
}

/** Bytes of the rows of these tables, each row counted at every position it holds. */
export function tableSizesQuery(projectId: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  return built(pb, `SELECT table_digest, toString(sum(size_bytes)) AS size_bytes FROM (
      SELECT table_digest, row_key FROM table_positions
      WHERE project_id = ${project} AND (table_digest, generation) IN (
        SELECT digest, any(generation) FROM tables WHERE project_id = ${project} AND digest IN ${pb.inStrings(digests)} GROUP BY digest)
    ) AS positions ANY LEFT JOIN (
      SELECT row_key, any(size_bytes) AS size_bytes FROM table_rows WHERE project_id = ${project} GROUP BY row_key
    ) AS sizes USING row_key
    GROUP BY table_digest`);
}

/**
 * The text of those of these rows (at most IDS_PER_QUERY digests) the table `tableDigest`
 * holds, in one query: the rows are found by digest, and kept when their 64-bit key
 * (tableRows.ts rowKey) is among the table's position keys (8 bytes a position, of the
 * generations its `tables` rows name; any is complete). None when the table does not exist.
 */
export function heldRowValuesQuery(projectId: string, tableDigest: string, digests: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const table = pb.str(tableDigest);
  return built(pb, `SELECT digest, val FROM (
      SELECT digest, any(val) AS val, any(row_key) AS key FROM table_rows
      WHERE project_id = ${project} AND digest IN ${pb.inStrings(digests)} GROUP BY digest)
    WHERE key IN (SELECT row_key FROM table_positions WHERE project_id = ${project} AND table_digest = ${table}
      AND generation IN (SELECT generation FROM tables WHERE project_id = ${project} AND digest = ${table}))`);
}
