import { SHOWN_ORDER } from "../../contract/callFields.js";
import type { CallsFilter } from "../../contract/calls.js";
import type { SortBy } from "../../contract/common.js";
import type { Query } from "../../contract/queryExpr.js";
import { ParamBuilder } from "../sql.js";
import { compileQuery } from "../expr/compile.js";
import { orderByTerms } from "../expr/sort.js";
import type { FieldSet } from "../expr/fields.js";
import { callsQueryFields } from "./queryFields.js";
import { retainedSince } from "../projects/retention.js";

/** What a calls read asks for, independent of HTTP. */
export interface CallsQuerySpec {
  readonly projectId: string;
  readonly filter?: CallsFilter | null;
  readonly query?: Query | null;
  readonly sortBy?: readonly SortBy[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
  readonly columns?: readonly string[] | null;
  /** Set by the repository when it has just seen that the project has no deleted calls. */
  readonly noDeletions?: boolean;
  /** The fields of refs resolved for `expand_columns` (expandedFields.ts), when asked. */
  readonly expandedFields?: FieldSet | null;
  /** The project's retention cutoff (store/projects/retention.ts): calls that started before it are left out. */
  readonly retainedFrom?: number | null;
  /** Only calls that ended in [from, to) (µs): a monitor's sweep (worker/monitors/). */
  readonly endedWithin?: { readonly fromMicros: number; readonly toMicros: number } | null;
}

export const DEFAULT_SORT: readonly SortBy[] = [{ field: "started_at", direction: "asc" }];

/**
 * Columns that always come back, and the ones each output field needs: the attributes, their
 * span's resource (spanResources.ts) and the inputs and output they may repeat (ioCopies.ts),
 * which the repository puts back in the text.
 */
const BASE_COLUMNS = ["project_id", "id", "trace_id", "op_name", "started_at", "display_name"];
const COLUMN_NEEDS: Record<string, readonly string[]> = {
  summary: ["summary", "ended_at", "exception"],
  attributes: ["attributes", "resource_hash", "inputs", "output"],
  storage_size_bytes: ["storage_size_bytes"],
};
/** The base columns, the other fields clients read (contract/callFields.ts, their order), the storage size, the resource's hash. */
export const ALL_COLUMNS = [...BASE_COLUMNS, ...SHOWN_ORDER.filter((name) => !BASE_COLUMNS.includes(name)), "storage_size_bytes", "resource_hash"];

export function selectedColumns(columns: readonly string[] | null | undefined): string[] {
  if (!columns || columns.length === 0) return ALL_COLUMNS;
  const wanted = new Set(BASE_COLUMNS);
  for (const column of columns) {
    const top = column.split(".")[0] ?? "";
    for (const c of COLUMN_NEEDS[top] ?? (ALL_COLUMNS.includes(top) ? [top] : [])) wanted.add(c);
  }
  return ALL_COLUMNS.filter((c) => wanted.has(c));
}

/** `op_names` entries ending in `:*` match every version of the op. */
function opNameCondition(names: readonly string[], pb: ParamBuilder): string {
  const exact = names.filter((n) => !n.endsWith(":*"));
  const prefixes = names.filter((n) => n.endsWith(":*")).map((n) => n.slice(0, -1));
  const parts = exact.length > 0 ? [`op_name IN ${pb.inStrings(exact)}`] : [];
  for (const p of prefixes) parts.push(`substring(op_name, 1, ${pb.int(Buffer.byteLength(p))}) = ${pb.str(p)}`);
  return `(${parts.join(" OR ")})`;
}

function refsCondition(prefix: string, refs: readonly string[], pb: ParamBuilder): string {
  return `arrayExists((p, v) -> substring(p, 1, ${pb.int(prefix.length)}) = ${pb.str(prefix)} AND has(${pb.strings(refs)}, v), json_paths, json_values)`;
}

/** Each CallsFilter field as one condition; absent or empty fields add nothing. */
function filterConditions(filter: CallsFilter, pb: ParamBuilder, projectParam: string): string[] {
  const out: string[] = [];
  const inList = (column: string, values: readonly string[] | null | undefined) => {
    if (values && values.length > 0) out.push(`${column} IN ${pb.inStrings(values)}`);
  };
  if (filter.op_names && filter.op_names.length > 0) out.push(opNameCondition(filter.op_names, pb));
  inList("parent_id", filter.parent_ids);
  if (filter.trace_ids && filter.trace_ids.length > 0) {
    // As for call_ids: the index gives the traces' started_at values, so ClickHouse reads only
    // their granules instead of every call of the project (a trace opened in the UI).
    const ids = pb.inStrings(filter.trace_ids);
    out.push(`trace_id IN ${ids}`, `started_at IN (SELECT started_at FROM call_index WHERE project_id = ${projectParam} AND trace_id IN ${ids})`);
  }
  if (filter.call_ids && filter.call_ids.length > 0) {
    // The index gives each call's started_at, so ClickHouse reads only their granules.
    const ids = pb.inStrings(filter.call_ids);
    out.push(`id IN ${ids}`, `started_at IN (SELECT started_at FROM call_index WHERE project_id = ${projectParam} AND id IN ${ids})`);
  }
  inList("thread_id", filter.thread_ids);
  inList("turn_id", filter.turn_ids);
  inList("wb_user_id", [...(filter.wb_user_ids ?? []), ...(filter.svc_user_ids ?? [])]);
  inList("wb_run_id", [...(filter.wb_run_ids ?? []), ...(filter.svc_run_ids ?? [])]);
  if (filter.input_refs && filter.input_refs.length > 0) out.push(refsCondition("inputs.", filter.input_refs, pb));
  if (filter.output_refs && filter.output_refs.length > 0) out.push(refsCondition("output", filter.output_refs, pb));
  if (filter.trace_roots_only) out.push("parent_id IS NULL");
  return out;
}

/** The WHERE clause of every calls read: project, within its retention, not deleted, filter, query expression. */
export function whereClause(spec: CallsQuerySpec, pb: ParamBuilder, extra: readonly string[] = []): string {
  const project = pb.str(spec.projectId);
  const conditions = [
    `project_id = ${project}`,
    ...retainedSince("started_at", spec.retainedFrom, pb),
    ...(spec.noDeletions ? [] : [`id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${project})`]),
    ...(spec.filter ? filterConditions(spec.filter, pb, project) : []),
    ...(spec.query ? [compileQuery(spec.query, callsQueryFields(spec.expandedFields), pb, { projectId: spec.projectId })] : []),
    ...(spec.endedWithin ? endedWithinConditions(spec.endedWithin, pb) : []),
    ...extra,
  ];
  return conditions.join("\n  AND ");
}

/** A call ends after it starts: the bound on started_at lets ClickHouse skip the granules of later calls. */
function endedWithinConditions(window: { fromMicros: number; toMicros: number }, pb: ParamBuilder): string[] {
  const to = pb.int(window.toMicros);
  return [`started_at < ${to}`, `ended_at >= ${pb.int(window.fromMicros)}`, `ended_at < ${to}`];
}

export function orderByClause(sortBy: readonly SortBy[] | null | undefined, pb: ParamBuilder, projectId?: string, expanded?: FieldSet | null): string {
  const sorts = sortBy && sortBy.length > 0 ? sortBy : DEFAULT_SORT;
  const terms = orderByTerms(sorts, callsQueryFields(expanded), pb, { projectId });
  const last = sorts[sorts.length - 1];
  if (!sorts.some((s) => s.field === "id")) terms.push(`id ${last?.direction === "desc" ? "DESC" : "ASC"}`);
  return terms.join(", ");
}

/** A range of started_at, both ends included. */
export interface TimeWindow {
  readonly fromMicros?: number;
  readonly toMicros?: number;
}

function windowConditions(window: TimeWindow | null, pb: ParamBuilder): string[] {
  const out: string[] = [];
  if (window?.fromMicros !== undefined) out.push(`started_at >= ${pb.int(window.fromMicros)}`);
  if (window?.toMicros !== undefined) out.push(`started_at <= ${pb.int(window.toMicros)}`);
  return out;
}

/**
 * The page query. Plan: FINAL collapses the versions of each call; a time window on
 * started_at (the second key of the sort order) lets ClickHouse read only the granules of
 * the newest (or oldest) calls when the sort starts with started_at.
 */
export function callsPageQuery(spec: CallsQuerySpec, window: TimeWindow | null, onCluster = false) {
  const pb = new ParamBuilder();
  const where = whereClause(spec, pb, windowConditions(window, pb));
  const order = orderByClause(spec.sortBy, pb, spec.projectId, spec.expandedFields);
  const limitClause = pb.limitOffset(spec.limit, spec.offset);
  // On a cluster, 18.16 names a scalar subquery of ORDER BY one way on the node that asked and
  // another on the shards ("Not found column"): such a page (a sort by feedback or cost) is
  // sorted above the shards, over every matching call.
  if (onCluster && /\(SELECT\b/.test(order)) {
    return {
      sql: `SELECT ${selectedColumns(spec.columns).join(", ")}
FROM (SELECT * FROM calls FINAL WHERE ${where})
ORDER BY ${order}
${limitClause}`,
      params: pb.params,
    };
  }
  return {
    sql: `SELECT ${selectedColumns(spec.columns).join(", ")}
FROM calls FINAL
WHERE ${where}
ORDER BY ${order}
${limitClause}`,
    params: pb.params,
  };
}

/**
 * The count (and total size) of the calls a query matches. A capped count reads at most
 * `limit` collapsed rows. An uncapped one may be split into disjoint started_at slices,
 * counted in parallel branches of a UNION ALL: FINAL collapses each slice on its own
 * (all versions of a call share its started_at) and runs on one thread per branch.
 */
export function callsCountQuery(spec: CallsQuerySpec, withStorage: boolean, slices: readonly TimeWindow[] = []) {
  const pb = new ParamBuilder();
  const figures = `count() AS count${withStorage ? ", sum(storage_size_bytes) AS total_storage_size_bytes" : ""}`;
  if (spec.limit !== null && spec.limit !== undefined) {
    const where = whereClause(spec, pb);
    return { sql: `SELECT ${figures} FROM (SELECT storage_size_bytes FROM calls FINAL WHERE ${where} LIMIT ${pb.count(spec.limit)})`, params: pb.params };
  }
  if (slices.length < 2) return { sql: `SELECT ${figures} FROM calls FINAL WHERE ${whereClause(spec, pb)}`, params: pb.params };
  const branches = slices.map((slice) => `SELECT ${figures} FROM calls FINAL WHERE ${whereClause(spec, pb, windowConditions(slice, pb))}`);
  const sums = `sum(count) AS count${withStorage ? ", sum(total_storage_size_bytes) AS total_storage_size_bytes" : ""}`;
  return { sql: `SELECT ${sums} FROM (${branches.join("\nUNION ALL\n")})`, params: pb.params };
}
