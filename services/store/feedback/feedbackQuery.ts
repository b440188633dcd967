import { FEEDBACK_FIELDS, MAX_FEEDBACK_QUERY_LIMIT } from "../../contract/feedback.js";
import type { SortBy } from "../../contract/common.js";
import type { Query } from "../../contract/queryExpr.js";
import { ValidationError } from "../../errors.js";
import { compileQuery } from "../expr/compile.js";
import { orderByTerms } from "../expr/sort.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { API_COLUMNS } from "./feedbackRows.js";
import { FEEDBACK_QUERY_FIELDS } from "./fields.js";
import { retainedFeedback } from "../projects/retention.js";

/**
 * SQL of the feedback reads and deletes. Every read is `FROM feedback FINAL WHERE
 * project_id = … AND deleted = 0`: FINAL keeps the newest version of each feedback (a
 * tombstone when it was deleted), and `deleted = 0` then drops the deleted ones.
 */

export interface FeedbackQuerySpec {
  readonly projectId: string;
  readonly fields?: readonly string[] | null;
  readonly query?: Query | null;
  readonly sortBy?: readonly SortBy[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
  /** The project's retention cutoff: feedback on calls past it is left out. */
  readonly retainedFrom?: number | null;
}

export const DEFAULT_FEEDBACK_SORT: readonly SortBy[] = [{ field: "created_at", direction: "asc" }];

/** Live feedback of one project (within its retention when given), and the query expression when there is one. */
function liveWhere(projectId: string, query: Query | null | undefined, pb: ParamBuilder, retainedFrom: number | null = null): string {
  const project = pb.str(projectId);
  const conditions = [`project_id = ${project}`, "deleted = 0", ...retainedFeedback(project, retainedFrom, pb)];
  if (query) conditions.push(compileQuery(query, FEEDBACK_QUERY_FIELDS, pb));
  return conditions.join("\n  AND ");
}

/** The asked fields (validated), or all of them; always in the record's order. */
export function selectedFields(fields: readonly string[] | null | undefined): (typeof API_COLUMNS)[number][] {
  if (!fields || fields.length === 0) return [...API_COLUMNS];
  fields.forEach((f, i) => {
    if (!(FEEDBACK_FIELDS as readonly string[]).includes(f)) {
      throw ValidationError.at(["body", "fields", i], `unknown feedback field ${JSON.stringify(f)} (known: ${FEEDBACK_FIELDS.join(", ")})`);
    }
  });
  return API_COLUMNS.filter((c) => fields.includes(c));
}

/** `/feedback/query`: default order created_at, then id, in the last sort's direction. */
export function feedbackSelectQuery(spec: FeedbackQuerySpec): BuiltQuery {
  const pb = new ParamBuilder();
  const columns = selectedFields(spec.fields);
  const where = liveWhere(spec.projectId, spec.query, pb, spec.retainedFrom ?? null);
  const sorts = spec.sortBy && spec.sortBy.length > 0 ? spec.sortBy : DEFAULT_FEEDBACK_SORT;
  const order = orderByTerms(sorts, FEEDBACK_QUERY_FIELDS, pb);
  if (!sorts.some((s) => s.field === "id")) order.push(`id ${sorts[sorts.length - 1]?.direction === "desc" ? "DESC" : "ASC"}`);
  const limit = spec.limit ?? MAX_FEEDBACK_QUERY_LIMIT;
  const offset = spec.offset ?? 0;
  return {
    sql: `SELECT ${columns.join(", ")}
FROM feedback FINAL
WHERE ${where}
ORDER BY ${order.join(", ")}
LIMIT ${offset > 0 ? `${pb.count(offset)}, ` : ""}${pb.count(limit)}`,
    params: pb.params,
  };
}

/**
 * `/feedback/purge`: one INSERT … SELECT writes a tombstone for every live feedback the
 * query matches, each with a version above the one it deletes (and at least `version`, the
 * writer's clock), so FINAL prefers the tombstone whatever the merge state.
 */
export function feedbackPurgeQuery(projectId: string, query: Query, version: number): BuiltQuery {
  const pb = new ParamBuilder();
  const where = liveWhere(projectId, query, pb);
  return {
    sql: `INSERT INTO feedback (project_id, id, payload, deleted, version)
SELECT project_id, id, '{}', 1, greatest(version + 1, toUInt64(${pb.int(version)}))
FROM feedback FINAL
WHERE ${where}`,
    params: pb.params,
  };
}

/** One live feedback by id, with its version (for `/feedback/replace`). */
export function feedbackByIdQuery(projectId: string, id: string): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT id, version FROM feedback FINAL
WHERE project_id = ${pb.str(projectId)} AND id = ${pb.str(id)} AND deleted = 0`,
    params: pb.params,
  };
}

/** How many live feedback name `triggerRef` as their trigger (a monitor version's scores), and the newest one's time. */
export function triggerStatsQuery(projectId: string, triggerRef: string): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT count() AS n, max(created_at) AS last_at FROM feedback FINAL
WHERE project_id = ${pb.str(projectId)} AND trigger_ref = ${pb.str(triggerRef)} AND deleted = 0`,
    params: pb.params,
  };
}

/**
 * The feedback on a chunk of calls (`include_feedback`), oldest first, at most `perCall`
 * per call.
 */
export function feedbackForCallsQuery(projectId: string, callIds: readonly string[], perCall: number): BuiltQuery {
  const pb = new ParamBuilder();
  return {
    sql: `SELECT call_id, ${API_COLUMNS.join(", ")}
FROM feedback FINAL
WHERE project_id = ${pb.str(projectId)} AND deleted = 0 AND call_id IN ${pb.inStrings(callIds)}
ORDER BY call_id, created_at, id
LIMIT ${pb.count(perCall)} BY call_id`,
    params: pb.params,
  };
}
