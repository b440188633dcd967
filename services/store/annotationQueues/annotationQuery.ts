import type { ItemSortField, ItemsFilter } from "../../contract/annotationQueues.js";
import { ParamBuilder, type BuiltQuery } from "../sql.js";
import { andRetainedSince, retainedSince } from "../projects/retention.js";

/** SQL of annotation queues, items and progress; every value through the ParamBuilder. */

const QUEUE_COLUMNS = "project_id, id, name, description, scorer_refs, created_at, created_by, updated_at, deleted_at, version";

export interface SortSpec<F extends string> {
  readonly field: F;
  readonly direction: "asc" | "desc";
}

const orderBy = <F extends string>(sort: readonly SortSpec<F>[], column: (field: F) => string, tiebreak: string): string =>
  [...sort.map((s) => `${column(s.field)} ${s.direction === "desc" ? "DESC" : "ASC"}`), tiebreak].join(", ");

/** The live queue `queueId` (deleted ones too with `withDeleted`). */
export function queueByIdQuery(projectId: string, queueId: string, withDeleted = false): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT ${QUEUE_COLUMNS} FROM annotation_queues FINAL
    WHERE project_id = ${pb.str(projectId)} AND id = ${pb.str(queueId)}${withDeleted ? "" : " AND deleted_at IS NULL"}`;
  return { sql, params: pb.params };
}

export function liveQueuesQuery(projectId: string, queueIds: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT id FROM annotation_queues FINAL
    WHERE project_id = ${pb.str(projectId)} AND id IN ${pb.inStrings(queueIds)} AND deleted_at IS NULL`;
  return { sql, params: pb.params };
}

export type QueueSortField = "created_at" | "updated_at" | "name";

export interface QueuesQuerySpec {
  readonly projectId: string;
  readonly name?: string | null;
  readonly sortBy?: readonly SortSpec<QueueSortField>[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
}

const DEFAULT_QUEUE_SORT: readonly SortSpec<QueueSortField>[] = [{ field: "created_at", direction: "desc" }];

export function queuesQuery(spec: QueuesQuerySpec): BuiltQuery {
  const pb = new ParamBuilder();
  const conditions = [`project_id = ${pb.str(spec.projectId)}`, "deleted_at IS NULL"];
  if (spec.name) conditions.push(`positionCaseInsensitiveUTF8(name, ${pb.str(spec.name)}) > 0`);
  const sort = spec.sortBy && spec.sortBy.length > 0 ? spec.sortBy : DEFAULT_QUEUE_SORT;
  const sql = `SELECT ${QUEUE_COLUMNS} FROM annotation_queues FINAL
    WHERE ${conditions.join(" AND ")}
    ORDER BY ${orderBy(sort, (f) => f, "id ASC")}
    ${pb.limitOffset(spec.limit, spec.offset)}`;
  return { sql, params: pb.params };
}

/** Which of `callIds` the queue already holds. */
export function queuedCallsQuery(projectId: string, queueId: string, callIds: readonly string[]): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT DISTINCT call_id FROM annotation_queue_items
    WHERE project_id = ${pb.str(projectId)} AND queue_id = ${pb.str(queueId)} AND call_id IN ${pb.inStrings(callIds)}`;
  return { sql, params: pb.params };
}

// ---- items -------------------------------------------------------------------------------

const ITEM_COLUMNS = [
  "project_id", "queue_id", "position", "id", "call_id", "call_started_at", "call_ended_at", "call_op_name", "call_trace_id",
  "display_fields", "added_by", "created_at", "created_by",
];

const STATE = "if(progress_state = '', 'unstarted', progress_state)";

/** Sort fields as columns of the joined rows (an item's updated_at is its created_at: items never change). */
function itemColumn(field: ItemSortField): string {
  if (field === "updated_at") return "created_at";
  if (field === "annotation_state") return STATE;
  return field;
}

export interface ItemsQuerySpec {
  readonly projectId: string;
  readonly queueId: string;
  readonly filter?: ItemsFilter | null;
  readonly sortBy?: readonly SortSpec<ItemSortField>[] | null;
  readonly limit?: number | null;
  readonly offset?: number | null;
  readonly includePosition?: boolean;
  /** The project's retention cutoff (µs): items of calls that started before it are left out. */
  readonly retainedFrom?: number | null;
}

/** The condition that leaves out the items of calls past the retention (none without one). */
const retainedItems = (cutoff: number | null | undefined, pb: ParamBuilder): string =>
  andRetainedSince("call_started_at", cutoff, pb);

function itemConditions(spec: ItemsQuerySpec, pb: ParamBuilder, projectParam: string, queueParam: string): string[] {
  const out = [`project_id = ${projectParam}`, `queue_id = ${queueParam}`, ...retainedSince("call_started_at", spec.retainedFrom, pb)];
  const f = spec.filter ?? {};
  const equal = (column: string, value: string | null | undefined) => {
    if (value !== null && value !== undefined) out.push(`${column} = ${pb.str(value)}`);
  };
  equal("id", f.id);
  equal("call_id", f.call_id);
  equal("call_op_name", f.call_op_name);
  equal("call_trace_id", f.call_trace_id);
  if (f.added_by !== null && f.added_by !== undefined) out.push(`added_by = ${pb.str(f.added_by)}`);
  return out;
}

/** Each item's latest progress across annotators (the most recently updated one). */
function progressSubquery(projectParam: string, queueParam: string, itemIds: string | null): string {
  return `SELECT item_id AS id, argMax(annotation_state, updated_at) AS progress_state, argMax(annotator_id, updated_at) AS progress_annotator
    FROM annotation_progress FINAL
    WHERE project_id = ${projectParam} AND queue_id = ${queueParam}${itemIds ? ` AND item_id IN ${itemIds}` : ""}
    GROUP BY item_id`;
}

/** An item of a page: its id and its position, in page order (the page's first step). */
export interface ItemKey {
  readonly id: string;
  readonly position: string | number;
}

/**
 * The first step of a page: the ids and positions of its items, in order. It reads only the
 * columns the filter and the sort name. When neither names the annotation state, it reads the
 * items alone (in queue order a deep page only sorts the position column); otherwise it joins
 * every item that passes the other filters with its latest progress first.
 */
export function itemKeysQuery(spec: ItemsQuerySpec): BuiltQuery {
  const pb = new ParamBuilder();
  const projectParam = pb.str(spec.projectId);
  const queueParam = pb.str(spec.queueId);
  const conditions = itemConditions(spec, pb, projectParam, queueParam).join(" AND ");
  const sort = spec.sortBy ?? [];
  const order = orderBy(sort, itemColumn, "position ASC, id ASC");
  const states = spec.filter?.annotation_states;
  const byState = (states !== null && states !== undefined) || sort.some((s) => s.field === "annotation_state");
  const page = pb.limitOffset(spec.limit, spec.offset);
  if (!byState) return { sql: `SELECT id, position FROM annotation_queue_items WHERE ${conditions} ORDER BY ${order} ${page}`, params: pb.params };
  const columns = [...new Set(["id", "position", ...sort.filter((s) => s.field !== "annotation_state").map((s) => itemColumn(s.field))])];
  const sql = `SELECT id, position FROM (
      SELECT ${columns.join(", ")} FROM annotation_queue_items WHERE ${conditions}
    ) AS i ALL LEFT JOIN (${progressSubquery(projectParam, queueParam, null)}) AS p USING id
    ${states ? `WHERE ${STATE} IN ${pb.inStrings(states)}` : ""}
    ORDER BY ${order} ${page}`;
  return { sql, params: pb.params };
}

/**
 * The second step: the whole rows of some items of a page (at most idChunks' worth) with their
 * latest progress. Naming their positions lets the primary key skip every other granule.
 */
export function itemRowsQuery(projectId: string, queueId: string, keys: readonly ItemKey[]): BuiltQuery {
  const pb = new ParamBuilder();
  const projectParam = pb.str(projectId);
  const queueParam = pb.str(queueId);
  const ids = pb.inStrings(keys.map((k) => k.id));
  const positions = pb.inInts(keys.map((k) => Number(k.position)));
  const sql = `SELECT ${ITEM_COLUMNS.join(", ")}, progress_state, progress_annotator FROM (
      SELECT ${ITEM_COLUMNS.join(", ")} FROM annotation_queue_items
      PREWHERE id IN ${ids}
      WHERE project_id = ${projectParam} AND queue_id = ${queueParam} AND position IN ${positions}
    ) AS i ALL LEFT JOIN (${progressSubquery(projectParam, queueParam, ids)}) AS p USING id`;
  return { sql, params: pb.params };
}

/**
 * For each of `positions`: how many items of the queue come before it (from the queue's
 * positions sorted once: an array of integers, whatever the page's order).
 */
export function placesBeforeQuery(projectId: string, queueId: string, positions: readonly number[], retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT position, min(rank) - 1 AS before FROM (
      SELECT arraySort(groupArray(position)) AS ordered FROM annotation_queue_items
      WHERE project_id = ${pb.str(projectId)} AND queue_id = ${pb.str(queueId)}${retainedItems(retainedFrom, pb)}
    ) AS q
    ARRAY JOIN ordered AS position, arrayEnumerate(ordered) AS rank
    WHERE position IN ${pb.inInts(positions)}
    GROUP BY position`;
  return { sql, params: pb.params };
}

/** The ids of the items at each of `positions`: one, unless two processes gave two items the same microsecond. */
export function idsAtPositionsQuery(projectId: string, queueId: string, positions: readonly number[], retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT position, groupArray(id) AS ids FROM annotation_queue_items
    WHERE project_id = ${pb.str(projectId)} AND queue_id = ${pb.str(queueId)} AND position IN ${pb.inInts(positions)}${retainedItems(retainedFrom, pb)}
    GROUP BY position`;
  return { sql, params: pb.params };
}

/** The item `itemId` of the queue with its latest progress (no row when the queue has no such item). */
export function itemByIdQuery(projectId: string, queueId: string, itemId: string, retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  const projectParam = pb.str(projectId);
  const queueParam = pb.str(queueId);
  const id = pb.str(itemId);
  const sql = `SELECT ${ITEM_COLUMNS.join(", ")}, progress_state, progress_annotator FROM (
      SELECT ${ITEM_COLUMNS.join(", ")} FROM annotation_queue_items
      WHERE project_id = ${projectParam} AND queue_id = ${queueParam} AND id = ${id}${retainedItems(retainedFrom, pb)}
      LIMIT 1
    ) AS i ALL LEFT JOIN (${progressSubquery(projectParam, queueParam, `(${id})`)}) AS p USING id`;
  return { sql, params: pb.params };
}

/** One annotator's stored state of an item. */
export function progressQuery(projectId: string, queueId: string, itemId: string, annotatorId: string): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT annotation_state, created_at, version FROM annotation_progress FINAL
    WHERE project_id = ${pb.str(projectId)} AND queue_id = ${pb.str(queueId)} AND item_id = ${pb.str(itemId)} AND annotator_id = ${pb.str(annotatorId)}`;
  return { sql, params: pb.params };
}

/** Per queue: how many items it holds. */
export function itemCountsQuery(projectId: string, queueIds: readonly string[], retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  const sql = `SELECT queue_id, count() AS n FROM annotation_queue_items
    WHERE project_id = ${pb.str(projectId)} AND queue_id IN ${pb.inStrings(queueIds)}${retainedItems(retainedFrom, pb)} GROUP BY queue_id`;
  return { sql, params: pb.params };
}

/**
 * Per queue: how many of its items at least one annotator completed or skipped (progress is
 * only ever written for an item of its queue, so no join with the items is needed).
 */
export function doneCountsQuery(projectId: string, queueIds: readonly string[], retainedFrom: number | null): BuiltQuery {
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const expiredItems = retainedFrom === null ? "" : ` AND item_id NOT IN (SELECT id FROM annotation_queue_items WHERE project_id = ${project} AND call_started_at < ${pb.int(retainedFrom)})`;
  const sql = `SELECT queue_id, uniqExact(item_id) AS n FROM annotation_progress FINAL
    WHERE project_id = ${project} AND queue_id IN ${pb.inStrings(queueIds)} AND annotation_state IN ('completed', 'skipped')${expiredItems}
    GROUP BY queue_id`;
  return { sql, params: pb.params };
}
