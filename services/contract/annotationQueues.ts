import { parseRef } from "../refs.js";
import { Offset, ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { z } from "./zod.js";

/**
 * Annotation queues (spec: tracing-api-evaluation.md, "Annotation queues"): queues of calls
 * that people annotate, each person (the key's user) moving each item through the states of
 * ANNOTATION_TRANSITIONS. Semantics in services/query/annotationQueuesRoutes.ts, storage in
 * store/annotationQueues/.
 */

const TAG = "Annotation queues";

export const MAX_QUEUE_QUERY_LIMIT = 10_000;
export const MAX_ITEMS_QUERY_LIMIT = 10_000;
export const MAX_CALLS_PER_ADD = 10_000;
export const MAX_STATS_QUEUES = 1000;
export const MAX_SCORER_REFS = 100;
export const MAX_DISPLAY_FIELDS = 100;

export const ANNOTATION_STATES = ["unstarted", "in_progress", "completed", "skipped"] as const;
export const AnnotationState = z.enum(ANNOTATION_STATES);
export type AnnotationState = z.infer<typeof AnnotationState>;

const isRef = (text: string): boolean => {
  try {
    parseRef(text);
    return true;
  } catch {
    return false;
  }
};

const QueueName = z.string().min(1).max(1024).refine((s) => s.trim().length > 0, "must not be only whitespace");
const Description = z.string().max(16_384);
const ScorerRefs = z
  .array(z.string().max(4096).refine(isRef, "must be a weave:/// ref"))
  .max(MAX_SCORER_REFS)
  .openapi({ description: "weave:/// refs of the scorers annotators fill in" });
const Id = z.string().min(1).max(512);
const QueryLimit = (max: number) => z.number().int().min(0).max(max).nullish().openapi({ description: `At most ${max}` });

const direction = z.enum(["asc", "desc"]);
const sortOf = <F extends readonly [string, ...string[]]>(fields: F) => z.array(z.object({ field: z.enum(fields), direction })).max(10);

// ---- shapes ------------------------------------------------------------------------------

export const AnnotationQueueSchema = z
  .object({
    id: z.string(),
    project_id: z.string(),
    name: z.string(),
    description: z.string(),
    scorer_refs: z.array(z.string()),
    created_at: z.string(),
    created_by: z.string(),
    updated_at: z.string(),
    deleted_at: z.string().nullable(),
  })
  .openapi("AnnotationQueue");
export type AnnotationQueueSchema = z.infer<typeof AnnotationQueueSchema>;

export const AnnotationQueueItemSchema = z
  .object({
    id: z.string(),
    project_id: z.string(),
    queue_id: z.string(),
    call_id: z.string(),
    call_started_at: z.string(),
    call_ended_at: z.string().nullable(),
    call_op_name: z.string(),
    call_trace_id: z.string(),
    display_fields: z.array(z.string()),
    added_by: z.string().nullable(),
    annotation_state: AnnotationState,
    annotator_user_id: z.string().nullable(),
    created_at: z.string(),
    created_by: z.string(),
    updated_at: z.string(),
    deleted_at: z.string().nullable(),
    position_in_queue: z.number().int().nullable().openapi({ description: "1-based place in the whole queue (order of adding); only with include_position" }),
  })
  .openapi("AnnotationQueueItem");
export type AnnotationQueueItemSchema = z.infer<typeof AnnotationQueueItemSchema>;

// ---- requests ----------------------------------------------------------------------------

export const QueueCreateReq = z
  .object({
    project_id: ProjectId,
    name: QueueName,
    description: Description.default(""),
    scorer_refs: ScorerRefs,
    wb_user_id: z.string().nullish().openapi({ description: "Ignored: the server fills it from the key" }),
  })
  .openapi("AnnotationQueueCreateReq");
export const QueueCreateRes = z.object({ id: z.string() }).openapi("AnnotationQueueCreateRes");

export const QUEUE_SORT_FIELDS = ["created_at", "updated_at", "name"] as const;
export const QueuesQueryReq = z
  .object({
    project_id: ProjectId,
    name: z.string().max(1024).nullish().openapi({ description: "Case-insensitive substring of the name" }),
    sort_by: sortOf(QUEUE_SORT_FIELDS).nullish().openapi({ description: "Default: created_at desc" }),
    limit: QueryLimit(MAX_QUEUE_QUERY_LIMIT),
    offset: Offset,
  })
  .openapi("AnnotationQueuesQueryReq");
export type QueuesQueryReq = z.infer<typeof QueuesQueryReq>;

export const QueueParams = z.object({ queue_id: Id });
export const QueueQuery = z.object({ project_id: ProjectId });
export const QueueRes = z.object({ queue: AnnotationQueueSchema }).openapi("AnnotationQueueRes");

export const QueueUpdateReq = z
  .object({
    project_id: ProjectId,
    name: QueueName.nullish(),
    description: Description.nullish(),
    scorer_refs: ScorerRefs.nullish(),
    wb_user_id: z.string().nullish().openapi({ description: "Ignored" }),
  })
  .openapi("AnnotationQueueUpdateReq");
export type QueueUpdateReq = z.infer<typeof QueueUpdateReq>;

export const QueuesStatsReq = z
  .object({ project_id: ProjectId, queue_ids: z.array(Id).max(MAX_STATS_QUEUES) })
  .openapi("AnnotationQueuesStatsReq");
export const QueueStats = z
  .object({ queue_id: z.string(), total_items: z.number().int(), completed_items: z.number().int() })
  .openapi("AnnotationQueueStats");
export type QueueStats = z.infer<typeof QueueStats>;
export const QueuesStatsRes = z.object({ stats: z.array(QueueStats) }).openapi("AnnotationQueuesStatsRes");

export const AddCallsReq = z
  .object({
    project_id: ProjectId,
    call_ids: z.array(Id).min(1).max(MAX_CALLS_PER_ADD),
    display_fields: z.array(z.string().min(1).max(1024)).max(MAX_DISPLAY_FIELDS).openapi({ description: 'Paths shown to annotators, e.g. "inputs.prompt"' }),
    wb_user_id: z.string().nullish().openapi({ description: "Ignored" }),
  })
  .openapi("AnnotationQueueAddCallsReq");
export const AddCallsRes = z
  .object({
    added_count: z.number().int().openapi({ description: "Calls added as new items" }),
    duplicates: z.number().int().openapi({ description: "Call ids already in the queue, or named twice in the request" }),
  })
  .openapi("AnnotationQueueAddCallsRes");

export const ItemsFilter = z
  .object({
    id: Id.nullish(),
    call_id: Id.nullish(),
    call_op_name: z.string().max(4096).nullish(),
    call_trace_id: Id.nullish(),
    added_by: z.string().max(512).nullish(),
    annotation_states: z.array(AnnotationState).max(ANNOTATION_STATES.length * 2).nullish(),
  })
  .openapi("AnnotationQueueItemsFilter");
export type ItemsFilter = z.infer<typeof ItemsFilter>;

export const ITEM_SORT_FIELDS = [
  "created_at", "updated_at", "call_started_at", "call_ended_at", "call_op_name", "call_trace_id", "call_id", "id", "added_by", "annotation_state",
] as const;
export type ItemSortField = (typeof ITEM_SORT_FIELDS)[number];

export const ItemsQueryReq = z
  .object({
    project_id: ProjectId,
    filter: ItemsFilter.nullish(),
    sort_by: sortOf(ITEM_SORT_FIELDS).nullish().openapi({ description: "Default: the queue's order (order of adding)" }),
    limit: QueryLimit(MAX_ITEMS_QUERY_LIMIT),
    offset: Offset,
    include_position: z.boolean().default(false),
  })
  .openapi("AnnotationQueueItemsQueryReq");
export type ItemsQueryReq = z.infer<typeof ItemsQueryReq>;
export const ItemsQueryRes = z.object({ items: z.array(AnnotationQueueItemSchema) }).openapi("AnnotationQueueItemsQueryRes");

export const ItemParams = z.object({ queue_id: Id, item_id: Id });
export const ProgressReq = z
  .object({ project_id: ProjectId, annotation_state: AnnotationState, wb_user_id: z.string().nullish().openapi({ description: "Ignored" }) })
  .openapi("AnnotatorQueueItemsProgressUpdateReq");
export const ProgressRes = z.object({ item: AnnotationQueueItemSchema }).openapi("AnnotatorQueueItemsProgressUpdateRes");

// ---- state machine -----------------------------------------------------------------------

/**
 * The states an annotator may move an item to from each of their own states (`none`: they
 * never touched it). Moving to the state one is in is a no-op (nothing written); every other
 * move is refused with 409. `unstarted` is never a target: an item leaves it and never returns.
 */
export const ANNOTATION_TRANSITIONS: Readonly<Record<AnnotationState | "none", readonly AnnotationState[]>> = {
  none: ["in_progress", "completed", "skipped"],
  unstarted: ["in_progress", "completed", "skipped"],
  in_progress: ["completed", "skipped"],
  completed: [],
  skipped: [],
};

// ---- operations --------------------------------------------------------------------------

const QUERY_PROJECT = { kind: "projects", of: ({ query }: { query: { project_id: string } }) => [query.project_id] } as const;
const QP = "/annotation_queues/{queue_id}";

export const queueCreateOp = operation({ id: "annotation_queue_create", method: "post", path: "/annotation_queues", summary: "Create an annotation queue", tag: TAG, body: QueueCreateReq, role: "writer", scope: BODY_PROJECT, response: QueueCreateRes, retries: "recorded" });
export const queuesQueryOp = operation({ id: "annotation_queues_query_stream", method: "post", path: "/annotation_queues/query", summary: "Query annotation queues (JSON lines)", tag: TAG, body: QueuesQueryReq, role: "viewer", scope: BODY_PROJECT, response: AnnotationQueueSchema, streamed: true });
export const queueReadOp = operation({ id: "annotation_queue_read", method: "get", path: QP, summary: "Read an annotation queue", tag: TAG, params: QueueParams, query: QueueQuery, role: "viewer", scope: QUERY_PROJECT, response: QueueRes });
export const queueUpdateOp = operation({ id: "annotation_queue_update", method: "put", path: QP, summary: "Update an annotation queue (only the fields given)", tag: TAG, params: QueueParams, body: QueueUpdateReq, role: "writer", scope: BODY_PROJECT, response: QueueRes });
export const queueDeleteOp = operation({ id: "annotation_queue_delete", method: "delete", path: QP, summary: "Delete an annotation queue (soft)", tag: TAG, params: QueueParams, query: QueueQuery, role: "admin", scope: QUERY_PROJECT, response: QueueRes });
export const queuesStatsOp = operation({ id: "annotation_queues_stats", method: "post", path: "/annotation_queues/stats", summary: "Item counts of annotation queues", tag: TAG, body: QueuesStatsReq, role: "viewer", scope: BODY_PROJECT, response: QueuesStatsRes });
export const addCallsOp = operation({ id: "annotation_queue_add_calls", method: "post", path: `${QP}/items`, summary: "Add calls to an annotation queue", tag: TAG, params: QueueParams, body: AddCallsReq, role: "writer", scope: BODY_PROJECT, response: AddCallsRes, retries: "recorded" });
export const itemsQueryOp = operation({ id: "annotation_queue_items_query", method: "post", path: `${QP}/items/query`, summary: "Query the items of an annotation queue", tag: TAG, params: QueueParams, body: ItemsQueryReq, role: "viewer", scope: BODY_PROJECT, response: ItemsQueryRes });
export const progressOp = operation({ id: "annotator_queue_items_progress_update", method: "post", path: `${QP}/items/{item_id}/progress`, summary: "Set the key's user's annotation state of an item", tag: TAG, params: ItemParams, body: ProgressReq, role: "writer", scope: BODY_PROJECT, response: ProgressRes });
