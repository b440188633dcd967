import type { ThreadSortBy, ThreadSortField, ThreadsQueryFilter } from "../../contract/threads.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { isoToMicros } from "../../times.js";
import { retainedSince } from "../projects/retention.js";

/** What a threads read asks for, independent of HTTP. */
export interface ThreadsQuerySpec {
  readonly projectId: string;
  readonly filter?: ThreadsQueryFilter | null;
  readonly sortBy?: readonly ThreadSortBy[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
  /** The project's retention cutoff (store/projects/retention.ts): threads last updated before it are left out. */
  readonly retainedFrom?: number | null;
}

export const DEFAULT_THREAD_SORT: readonly ThreadSortBy[] = [{ field: "last_updated", direction: "desc" }];

interface SortField {
  readonly column: string;
  /** How a value of the column read back as JSON goes back into SQL. */
  readonly type: "String" | "Int64" | "Float64";
  readonly nullable: boolean;
}

/** The sortable fields (the whitelist: no other identifier reaches SQL). */
const SORT_FIELDS: Record<ThreadSortField, SortField> = {
  thread_id: { column: "thread_id", type: "String", nullable: false },
  turn_count: { column: "turn_count", type: "Int64", nullable: false },
  start_time: { column: "start_time", type: "Int64", nullable: false },
  last_updated: { column: "last_updated", type: "Int64", nullable: false },
  p50_turn_duration_ms: { column: "p50_turn_duration_ms", type: "Float64", nullable: true },
  p99_turn_duration_ms: { column: "p99_turn_duration_ms", type: "Float64", nullable: true },
};

export const THREAD_COLUMNS = [
  "thread_id",
  "turn_count",
  "start_time",
  "last_updated",
  "first_turn_id",
  "last_turn_id",
  "p50_turn_duration_ms",
  "p99_turn_duration_ms",
] as const;

export function effectiveSort(sortBy: readonly ThreadSortBy[] | null | undefined): readonly ThreadSortBy[] {
  return sortBy && sortBy.length > 0 ? sortBy : DEFAULT_THREAD_SORT;
}

/**
 * ORDER BY terms. NULL percentiles (threads without a finished turn) sort last in both
 * directions. thread_id breaks ties, in the direction of the last term, so pages are stable.
 */
export function threadOrderBy(sortBy: readonly ThreadSortBy[] | null | undefined): string {
  const sorts = effectiveSort(sortBy);
  const terms = sorts.map((s) => `${SORT_FIELDS[s.field].column} ${s.direction === "desc" ? "DESC" : "ASC"}`);
  const last = sorts[sorts.length - 1];
  if (!sorts.some((s) => s.field === "thread_id")) terms.push(`thread_id ${last?.direction === "desc" ? "DESC" : "ASC"}`);
  return terms.join(", ");
}

/**
 * The conditions on a thread's figures that every threads read has: a turn left, a last
 * update within the project's retention, and the filter. Filters apply to a thread's figures (always of the whole thread): `after_datetime`
 * keeps threads that started after it, `before_datetime` those last updated before it, so
 * both together keep the threads whose whole activity lies inside the window (the meaning
 * Weave's ThreadsQueryFilter documents). Empty `thread_ids` restricts nothing.
 */
function figureConditions(spec: ThreadsQuerySpec, pb: ParamBuilder): string[] {
  const out = ["turn_count > 0", ...retainedSince("last_updated", spec.retainedFrom, pb)];
  const filter = spec.filter;
  if (!filter) return out;
  if (filter.thread_ids && filter.thread_ids.length > 0) out.push(`thread_id IN ${pb.inStrings(filter.thread_ids)}`);
  const after = filter.after_datetime ? isoToMicros(filter.after_datetime) : null;
  if (after !== null) out.push(`start_time > ${pb.int(after)}`);
  const before = filter.before_datetime ? isoToMicros(filter.before_datetime) : null;
  if (before !== null) out.push(`last_updated < ${pb.int(before)}`);
  return out;
}

function limitClause(spec: ThreadsQuerySpec, pb: ParamBuilder): string {
  return pb.limitOffset(spec.limit, spec.offset);
}

/** A bound on the first sort field: the page lies among the threads on its near side. */
export interface ThreadWindow {
  /** The value, as the threshold query returned it. */
  readonly threshold: string | number;
}

function thresholdParam(field: SortField, value: string | number, pb: ParamBuilder): string {
  if (field.type === "String") return pb.str(String(value));
  if (field.type === "Int64") return pb.int(BigInt(value));
  return pb.float(Number(value));
}

/**
 * The threshold of a windowed page: the value of the first sort field at rank `rank` (1 is
 * the first) among all stored versions that pass the conditions, NULLs skipped. Plan: no
 * FINAL, one column of the project's range, a top-N sort. No row when fewer rows pass.
 */
export function threadsThresholdQuery(spec: ThreadsQuerySpec, rank: number): BuiltQuery {
  const pb = new ParamBuilder();
  const first = effectiveSort(spec.sortBy)[0]!;
  const field = SORT_FIELDS[first.field];
  const where = [`project_id = ${pb.str(spec.projectId)}`, ...figureConditions(spec, pb)];
  if (field.nullable) where.push(`${field.column} IS NOT NULL`);
  // assumeNotNull: 18.16 sorts a Nullable column several times slower than a plain one.
  const key = field.nullable ? `assumeNotNull(${field.column})` : field.column;
  return {
    sql: `SELECT ${field.column} AS threshold
FROM threads
WHERE ${where.join("\n  AND ")}
ORDER BY ${key} ${first.direction === "desc" ? "DESC" : "ASC"}
LIMIT ${pb.count(rank - 1)}, 1`,
    params: pb.params,
  };
}

/**
 * A page of threads. `threads` holds one short row per thread (plus older versions not
 * merged yet), already aggregated by the worker, keyed (project_id, thread_id) in granules
 * of 256 rows; no call and no turn is read.
 *
 * Whole read (no window): the primary key narrows the read to the project's range; FINAL
 * keeps each thread's newest version; the conditions on the figures apply after FINAL (WHERE,
 * never PREWHERE: filtering before the versions collapse would resurrect an older one), and
 * ORDER BY ... LIMIT is a top-N sort. On 18.16 FINAL merges every row of the range: the read
 * costs more the more threads the project has (docs/benchmarks.md, "Figures that were kept in comments").
 *
 * Windowed read (`window` given, for a bounded page): only the threads that can be on the
 * page are read. Candidates are the threads with some stored version whose first sort field
 * is on the near side of the threshold (inner subquery: no FINAL, PREWHERE on that one
 * column). Their rows are found through the primary key (PREWHERE thread_id IN ..., so only
 * their granules are read), and each one's newest version is kept by ORDER BY thread_id,
 * version DESC LIMIT 1 BY thread_id: the row FINAL would keep (equal versions carry equal
 * figures, see threadsAggregate.ts), without FINAL's cost. The conditions and the same bound
 * then apply to those newest versions (outside the LIMIT BY, never pushed below it). This is
 * exact: a thread whose newest version is on the near side has a version there, so it is a
 * candidate, and every thread left out sorts after every thread kept (ties at the threshold
 * are all kept, so later sort terms still decide among them). The kept threads are thus the
 * head of the whole order; the caller checks that the page came back full and otherwise
 * reads without the window. The window pays more the more threads a project has
 * (`bench/threads.bench.ts`).
 */
export function threadsPageQuery(spec: ThreadsQuerySpec, window: ThreadWindow | null = null): BuiltQuery {
  const pb = new ParamBuilder();
  const project = `project_id = ${pb.str(spec.projectId)}`;
  const figures = figureConditions(spec, pb);
  const order = threadOrderBy(spec.sortBy);
  let sql: string;
  if (!window) {
    sql = `SELECT ${THREAD_COLUMNS.join(", ")}
FROM threads FINAL
WHERE ${[project, ...figures].join("\n  AND ")}
ORDER BY ${order}`;
  } else {
    const first = effectiveSort(spec.sortBy)[0]!;
    const field = SORT_FIELDS[first.field];
    const bound = `${field.column} ${first.direction === "desc" ? ">=" : "<="} ${thresholdParam(field, window.threshold, pb)}`;
    // The same placeholders serve every place they appear: one set of parameters.
    sql = `SELECT ${THREAD_COLUMNS.join(", ")}
FROM (
  SELECT ${THREAD_COLUMNS.join(", ")}
  FROM threads
  PREWHERE thread_id IN (SELECT thread_id FROM threads PREWHERE ${bound} WHERE ${[project, ...figures].join(" AND ")})
  WHERE ${project}
  ORDER BY thread_id, version DESC
  LIMIT 1 BY thread_id
)
WHERE ${[...figures, bound].join("\n  AND ")}
ORDER BY ${order}`;
  }
  const limit = limitClause(spec, pb);
  return { sql: limit ? `${sql}\n${limit}` : sql, params: pb.params };
}
