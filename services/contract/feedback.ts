import { Datetime, EmptyResponse, JsonObject, ProjectId, SortBy } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { QuerySchema } from "./queryExpr.js";
import { z } from "./zod.js";

/**
 * Feedback operations (spec: tracing-api.md, "Feedback"). What each one means is written
 * in services/query/feedbackRoutes.ts; builtin payload rules in store/feedback/payload.ts.
 */

export const MAX_FEEDBACK_BATCH = 1000;
export const MAX_FEEDBACK_QUERY_LIMIT = 10_000;
export const MAX_STATS_METRICS = 20;
export const MAX_SCHEMA_SAMPLES = 5000;
export const DEFAULT_SCHEMA_SAMPLES = 2000;

const Ref = z.string().min(1).max(4096);

export const FeedbackCreateReq = z
  .object({
    project_id: ProjectId,
    weave_ref: Ref.openapi({ description: "weave:/// ref of the same project; a call: weave:///<entity>/<project>/call/<id>" }),
    feedback_type: z.string().min(1).max(512),
    payload: JsonObject,
    id: z.string().min(1).max(512).nullish().openapi({ description: "Server generates a UUIDv7 when missing" }),
    creator: z.string().max(1024).nullish(),
    annotation_ref: Ref.nullish(),
    runnable_ref: Ref.nullish(),
    call_ref: Ref.nullish(),
    trigger_ref: Ref.nullish(),
    queue_id: z.string().max(512).nullish(),
    wb_user_id: z.string().nullish().openapi({ description: "Ignored: the server fills it from the key" }),
  })
  .openapi("FeedbackCreateReq");
export type FeedbackCreateReq = z.infer<typeof FeedbackCreateReq>;

export const FeedbackCreateRes = z
  .object({ id: z.string(), created_at: z.string(), wb_user_id: z.string(), payload: JsonObject })
  .openapi("FeedbackCreateRes");

export const FeedbackBatchCreateReq = z
  .object({ batch: z.array(FeedbackCreateReq).max(MAX_FEEDBACK_BATCH) })
  .openapi("FeedbackBatchCreateReq");
export const FeedbackBatchCreateRes = z.object({ res: z.array(FeedbackCreateRes) }).openapi("FeedbackBatchCreateRes");

export const FeedbackReplaceReq = FeedbackCreateReq.extend({
  feedback_id: z.string().min(1).max(512).openapi({ description: "The feedback this one replaces" }),
}).openapi("FeedbackReplaceReq");
export type FeedbackReplaceReq = z.infer<typeof FeedbackReplaceReq>;

/** A stored feedback as queries return it. */
export const FeedbackSchema = z
  .object({
    id: z.string(),
    project_id: z.string(),
    weave_ref: z.string(),
    wb_user_id: z.string(),
    creator: z.string().nullable(),
    created_at: z.string(),
    feedback_type: z.string(),
    payload: JsonObject,
    annotation_ref: z.string().nullable(),
    runnable_ref: z.string().nullable(),
    call_ref: z.string().nullable(),
    trigger_ref: z.string().nullable(),
    queue_id: z.string().nullable(),
  })
  .openapi("Feedback");
export type FeedbackSchema = z.infer<typeof FeedbackSchema>;

export const FEEDBACK_FIELDS = Object.keys(FeedbackSchema.shape) as (keyof FeedbackSchema)[];

export const FeedbackQueryReq = z
  .object({
    project_id: ProjectId,
    fields: z.array(z.string()).max(FEEDBACK_FIELDS.length * 2).nullish().openapi({ description: `Subset of: ${FEEDBACK_FIELDS.join(", ")}` }),
    query: QuerySchema.nullish(),
    sort_by: z.array(SortBy).max(10).nullish(),
    limit: z.number().int().min(0).max(MAX_FEEDBACK_QUERY_LIMIT).nullish().openapi({ description: `At most ${MAX_FEEDBACK_QUERY_LIMIT} (also the default)` }),
    offset: z.number().int().min(0).nullish(),
  })
  .openapi("FeedbackQueryReq");
export type FeedbackQueryReq = z.infer<typeof FeedbackQueryReq>;

export const FeedbackQueryRes = z
  .object({ result: z.array(FeedbackSchema.partial()) })
  .openapi("FeedbackQueryRes");

export const FeedbackPurgeReq = z.object({ project_id: ProjectId, query: QuerySchema }).openapi("FeedbackPurgeReq");

export const VALUE_TYPES = ["numeric", "boolean", "categorical"] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

const TriggerRef = Ref.openapi({ description: "Exact trigger_ref, or a prefix ending in `:*` for all versions" });

export const FeedbackPayloadSchemaReq = z
  .object({
    project_id: ProjectId,
    start: Datetime.nullish(),
    end: Datetime.nullish(),
    feedback_type: z.string().min(1).nullish(),
    trigger_ref: TriggerRef.nullish(),
    sample_limit: z.number().int().min(1).max(MAX_SCHEMA_SAMPLES).default(DEFAULT_SCHEMA_SAMPLES),
  })
  .openapi("FeedbackPayloadSchemaReq");
export type FeedbackPayloadSchemaReq = z.infer<typeof FeedbackPayloadSchemaReq>;

export const FeedbackPayloadPath = z.object({ json_path: z.string(), value_type: z.enum(VALUE_TYPES) }).openapi("FeedbackPayloadPath");
export type FeedbackPayloadPath = z.infer<typeof FeedbackPayloadPath>;
export const FeedbackPayloadSchemaRes = z.object({ paths: z.array(FeedbackPayloadPath) }).openapi("FeedbackPayloadSchemaRes");

export const AGGREGATIONS = {
  numeric: ["avg", "sum", "min", "max", "count"],
  boolean: ["count_true", "count_false", "count", "avg"],
  categorical: ["count", "count_distinct", "counts"],
} as const satisfies Record<ValueType, readonly string[]>;
export const DEFAULT_AGGREGATIONS: Record<ValueType, readonly string[]> = {
  numeric: ["avg", "min", "max"],
  boolean: ["count_true", "count_false"],
  categorical: ["counts"],
};
const ALL_AGGREGATIONS = [...new Set(Object.values(AGGREGATIONS).flat())] as [string, ...string[]];

export const FeedbackMetricSpec = z
  .object({
    json_path: z.string().min(1).max(1024).openapi({ description: "Dot path into the payload, e.g. `output.score`" }),
    value_type: z.enum(VALUE_TYPES).default("numeric"),
    aggregations: z.array(z.enum(ALL_AGGREGATIONS)).max(ALL_AGGREGATIONS.length).default([]),
    percentiles: z.array(z.number().min(0).max(100)).max(10).default([]).openapi({ description: "Numeric metrics only" }),
  })
  .openapi("FeedbackMetricSpec");
export type FeedbackMetricSpec = z.infer<typeof FeedbackMetricSpec>;

export const FeedbackStatsReq = z
  .object({
    project_id: ProjectId,
    start: Datetime,
    end: Datetime.nullish().openapi({ description: "Exclusive; default now" }),
    feedback_type: z.string().min(1).nullish(),
    trigger_ref: TriggerRef.nullish(),
    granularity: z.number().int().min(1).nullish().openapi({ description: "Bucket size in seconds; chosen from the range when missing" }),
    timezone: z.string().min(1).max(64).default("UTC"),
    metrics: z.array(FeedbackMetricSpec).max(MAX_STATS_METRICS).default([]),
  })
  .openapi("FeedbackStatsReq");
export type FeedbackStatsReq = z.infer<typeof FeedbackStatsReq>;

export const FeedbackStatsRes = z
  .object({
    start: z.string(),
    end: z.string(),
    granularity: z.number().int(),
    timezone: z.string(),
    buckets: z.array(z.record(z.string(), z.unknown())).openapi({
      description: "Every bucket of the range in order: {timestamp, count, <agg>_<slug>, p<N>_<slug>}",
    }),
    window_stats: z.record(z.string(), z.record(z.string(), z.unknown())).openapi({
      description: "The same aggregations over the whole range, per metric slug: {<slug>: {<agg>: value, p<N>: value}}",
    }),
  })
  .openapi("FeedbackStatsRes");
export type FeedbackStatsRes = z.infer<typeof FeedbackStatsRes>;

const TAG = "Feedback";

export const feedbackCreateOp = operation({ id: "feedback_create", method: "post", path: "/feedback/create", summary: "Create feedback", tag: TAG, body: FeedbackCreateReq, role: "writer", scope: BODY_PROJECT, response: FeedbackCreateRes, retries: "recorded" });
export const feedbackBatchCreateOp = operation({ id: "feedback_batch_create", method: "post", path: "/feedback/batch/create", summary: "Create feedback in a batch (all or nothing)", tag: TAG, body: FeedbackBatchCreateReq, role: "writer", scope: { kind: "projects", of: ({ body }) => body.batch.map((item) => item.project_id) }, response: FeedbackBatchCreateRes, retries: "recorded" });
export const feedbackQueryOp = operation({ id: "feedback_query", method: "post", path: "/feedback/query", summary: "Query feedback", tag: TAG, body: FeedbackQueryReq, role: "viewer", scope: BODY_PROJECT, response: FeedbackQueryRes });
export const feedbackPurgeOp = operation({ id: "feedback_purge", method: "post", path: "/feedback/purge", summary: "Delete the feedback a query matches", tag: TAG, body: FeedbackPurgeReq, role: "writer", scope: BODY_PROJECT, response: EmptyResponse });
export const feedbackReplaceOp = operation({ id: "feedback_replace", method: "post", path: "/feedback/replace", summary: "Replace feedback: delete feedback_id, create the new one", tag: TAG, body: FeedbackReplaceReq, role: "writer", scope: BODY_PROJECT, response: FeedbackCreateRes, retries: "recorded" });
export const feedbackPayloadSchemaOp = operation({ id: "feedback_payload_schema", method: "post", path: "/feedback/payload_schema", summary: "Payload paths and their value types", tag: TAG, body: FeedbackPayloadSchemaReq, role: "viewer", scope: BODY_PROJECT, response: FeedbackPayloadSchemaRes });
export const feedbackStatsOp = operation({ id: "feedback_stats", method: "post", path: "/feedback/stats", summary: "Feedback statistics in time buckets", tag: TAG, body: FeedbackStatsReq, role: "viewer", scope: BODY_PROJECT, response: FeedbackStatsRes });
