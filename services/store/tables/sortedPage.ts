import { MAX_JSON_DEPTH } from "../calls/flatten.js";
import { keyPathSegments } from "../expr/fields.js";
import type { Sort } from "../expr/sort.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { flattenRow, LEAF_ROOT, parseRow } from "./tableRows.js";
import type { StoredTable, TablePageSpec } from "./tablesQuery.js";

/**
 * The first pages of a table sorted by row fields, without reading every row's leaf text.
 *
 * The one sort (store/expr/sort.ts) orders a row field by its number (`toFloat64OrNull`, NULLs
 * last), then its text, absent fields last, then by position. The coarse key of a leaf,
 * (number, first SORT_PREFIX_BYTES bytes of the text) from `table_row_sort_keys`, orders
 * rows consistently with that: a row whose coarse key comes strictly before another's comes
 * before it in the full order. So:
 *
 * 1. `boundaryQuery`: among the sort keys of the table's rows that have the first sort
 *    field, the coarse key of the (offset + limit)-th in coarse order: `hi`.
 * 2. `candidatesQuery`: the positions whose row's coarse key is at most `hi` (in the sort's
 *    direction): the page and the rows tied with `hi`. They are a prefix of the full order
 *    (a position before a candidate has a coarse key up to the candidate's), so when there
 *    are at least offset + limit of them they hold the page. (Usually a few more than
 *    offset + limit; fewer only when a sort key was stored twice, and then the caller runs
 *    the plain query.)
 * 3. The candidates' text is read (it is read for the answer anyway), their leaves computed
 *    as stored (tableRows.ts flattenRow) and sorted here by the full rule; the page is cut
 *    from that order.
 *
 * When this does not apply (no limit, a deep page, fewer rows having the field than the
 * page needs, too many ties at the boundary, a boundary that is not a finite number) the
 * caller runs the plain query (tablesQuery.ts tablePositionsQuery), which gives the same answer.
 */

/**
 * Deepest page (offset + limit) answered this way: every candidate's text is read (a 64-row
 * granule of `table_rows` each) and parsed here, which past a few hundred rows costs more
 * than the plain query.
 */
export const SORTED_PAGE_MAX_ROWS = 300;
/** Most candidates read and sorted here (ties at the boundary included). */
export const SORTED_PAGE_MAX_CANDIDATES = 1000;

export interface CoarseKey {
  readonly number: number | null;
  readonly prefix: string;
}

const positionsOf = (table: StoredTable, pb: ParamBuilder): string =>
  `project_id = ${pb.str(table.projectId)} AND table_digest = ${pb.str(table.digest)} AND generation = ${pb.add(table.generation, "UInt64")}`;

function rowKeysOf(spec: TablePageSpec, pb: ParamBuilder): string {
  const filtered = spec.rowDigests && spec.rowDigests.length > 0 ? ` AND row_digest IN ${pb.inStrings(spec.rowDigests)}` : "";
  return `SELECT row_key FROM table_positions WHERE ${positionsOf(spec.table, pb)}${filtered}`;
}

/** The leaf path a sort field names (`question` → `val.question`); InvalidFieldError for a malformed one. */
export function leafPathOf(field: string): string {
  keyPathSegments(field, MAX_JSON_DEPTH, field);
  return `${LEAF_ROOT}.${field}`;
}

/** Whether a page of this query can be answered by sortedPage. */
export function sortedPageApplies(spec: TablePageSpec): boolean {
  const sorts = spec.sortBy ?? [];
  return sorts.length > 0 && spec.limit != null && spec.limit > 0 && (spec.offset ?? 0) + spec.limit <= SORTED_PAGE_MAX_ROWS;
}

const dir = (sort: Sort) => (sort.direction === "desc" ? "DESC" : "ASC");

/**
 * Step 1: the coarse key of the (offset + limit)-th sort key of the table's rows having the
 * first sort field; no row when fewer have it. A row stored twice (a repeated write not
 * merged yet) can only move this boundary earlier, which the caller notices: fewer
 * candidates than offset + limit.
 */
export function boundaryQuery(spec: TablePageSpec): BuiltQuery {
  const pb = new ParamBuilder();
  const first = spec.sortBy![0]!;
  const path = pb.str(leafPathOf(first.field));
  const n = (spec.offset ?? 0) + spec.limit! - 1;
  const d = dir(first);
  return {
    sql: `SELECT sort_number, sort_prefix FROM table_row_sort_keys
    WHERE project_id = ${pb.str(spec.table.projectId)} AND path = ${path} AND row_key IN (${rowKeysOf(spec, pb)})
    ORDER BY sort_number ${d} NULLS LAST, sort_prefix ${d} LIMIT ${pb.count(n)}, 1`,
    params: pb.params,
  };
}

/** Step 2: the positions whose row's coarse key is at most `hi` in the first sort's order (at most `max` + 1 of them). */
export function candidatesQuery(spec: TablePageSpec, hi: CoarseKey, max: number): BuiltQuery {
  const pb = new ParamBuilder();
  const first = spec.sortBy![0]!;
  const before = first.direction === "desc" ? ">" : "<";
  const upTo = first.direction === "desc" ? ">=" : "<=";
  const prefix = pb.str(hi.prefix);
  // NULL numbers sort last: a row with a number is always before a boundary without one.
  const within =
    hi.number === null
      ? `(sort_number IS NOT NULL OR sort_prefix ${upTo} ${prefix})`
      : `(sort_number IS NOT NULL AND (sort_number ${before} ${pb.float(hi.number)} OR (sort_number = ${pb.float(hi.number)} AND sort_prefix ${upTo} ${prefix})))`;
  const keys = `SELECT row_key FROM table_row_sort_keys
      WHERE project_id = ${pb.str(spec.table.projectId)} AND path = ${pb.str(leafPathOf(first.field))} AND ${within}`;
  const filtered = spec.rowDigests && spec.rowDigests.length > 0 ? ` AND row_digest IN ${pb.inStrings(spec.rowDigests)}` : "";
  return {
    sql: `SELECT row_digest, toString(idx) AS position FROM table_positions
    WHERE ${positionsOf(spec.table, pb)}${filtered} AND row_key IN (${keys})
    LIMIT ${pb.count(max + 1)}`,
    params: pb.params,
  };
}

export interface Candidate {
  readonly digest: string;
  readonly position: number;
  readonly val: string;
}

/** Step 3: the candidates in the one sort's order (fields, then position), cut to the page. */
export function sortCandidates(candidates: readonly Candidate[], sorts: readonly Sort[], offset: number, limit: number): Candidate[] {
  const paths = sorts.map((s) => leafPathOf(s.field));
  const keyed = candidates.map((c) => {
    const leaves = flattenRow(parseRow(c.val, []));
    const texts = paths.map((p) => {
      const i = leaves.paths.indexOf(p);
      return i < 0 ? null : Buffer.from(leaves.values[i]!, "utf8");
    });
    return { c, texts, numbers: texts.map((t) => (t === null ? null : float64OrNull(t.toString("utf8")))) };
  });
  keyed.sort((a, b) => {
    for (let i = 0; i < sorts.length; i++) {
      const sign = sorts[i]!.direction === "desc" ? -1 : 1;
      const byNumber = nullsLast(a.numbers[i]!, b.numbers[i]!, (x, y) => sign * (x < y ? -1 : x > y ? 1 : 0));
      if (byNumber !== 0) return byNumber;
      const byText = nullsLast(a.texts[i]!, b.texts[i]!, (x, y) => sign * Buffer.compare(x, y));
      if (byText !== 0) return byText;
    }
    return a.c.position - b.c.position;
  });
  return keyed.slice(offset, offset + limit).map((k) => k.c);
}

function nullsLast<T>(a: T | null, b: T | null, compare: (x: T, y: T) => number): number {
  if (a === null) return b === null ? 0 : 1;
  if (b === null) return -1;
  return compare(a, b);
}

const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const INFINITE = /^[+-]?inf(inity)?$/i;

/**
 * `toFloat64OrNull` of a leaf text as ClickHouse reads it for the sort: a decimal or
 * exponent number, or inf; anything else (and NaN, which ClickHouse orders with NULLs)
 * is null.
 */
export function float64OrNull(text: string): number | null {
  if (DECIMAL.test(text)) return Number(text);
  if (INFINITE.test(text)) return text.startsWith("-") ? -Infinity : Infinity;
  return null;
}
