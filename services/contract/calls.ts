import {
  CALL_FIELDS, COMPLETE_BODY, END_BODY, nullableInRow, SHOWN_ORDER, START_BODY,
  type BodyField, type BodyValue, type CallFieldSpec, type CallFieldType, type NullableInRow,
} from "./callFields.js";
import { Datetime, JsonObject, Limit, Offset, ProjectId, SortBy } from "./common.js";
import { QuerySchema } from "./queryExpr.js";
import { z } from "./zod.js";

/** The counts of LLMUsage, all optional integers. */
export const USAGE_KEYS = [
  "prompt_tokens", "input_tokens", "completion_tokens", "output_tokens", "requests", "total_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
] as const;
const count = z.number().int().nullish();
export const LLMUsage = z.object(Object.fromEntries(USAGE_KEYS.map((key) => [key, count])) as Record<(typeof USAGE_KEYS)[number], typeof count>);

export const CallSummary = z
  .object({
    usage: z.record(z.string(), LLMUsage.passthrough()).nullish(),
    status_counts: z.record(z.string(), z.number().int()).nullish(),
  })
  .passthrough();

/** How a body's field is checked (contract/callFields.ts). */
const BODY_ZOD = {
  project_id: ProjectId,
  id: z.string().min(1).max(512),
  op_name: z.string().min(1).max(2048),
  display_name: z.string().max(2048),
  text: z.string(),
  user: z.string(),
  datetime: Datetime,
  int: z.number().int(),
  json_object: JsonObject,
  json: z.unknown(),
  summary: CallSummary,
  bool: z.boolean(),
} satisfies Record<BodyValue, z.ZodType>;
const USER_DESCRIPTION = "Ignored: the server fills it from the key";

type BodyZod<F extends BodyField> = F[2] extends "required"
  ? (typeof BODY_ZOD)[F[1]]
  : F[2] extends "nullish"
    ? z.ZodOptional<z.ZodNullable<(typeof BODY_ZOD)[F[1]]>>
    : z.ZodOptional<(typeof BODY_ZOD)[F[1]]>;

/** A body's zod fields, in its order. Unknown keys are stripped (the service names them in `X-Ignored-Fields`). */
function bodyShape<B extends readonly BodyField[]>(body: B): { [F in B[number] as F[0]]: BodyZod<F> } {
  const entries = body.map(([name, value, presence]) => {
    const base: z.ZodType = BODY_ZOD[value];
    const field = presence === "required" ? base : presence === "nullish" ? base.nullish() : base.optional();
    return [name, value === "user" ? field.openapi({ description: USER_DESCRIPTION }) : field];
  });
  return Object.fromEntries(entries) as never;
}

export const StartedCallSchemaForInsert = z.object(bodyShape(START_BODY)).openapi("StartedCallSchemaForInsert");
export const EndedCallSchemaForInsert = z.object(bodyShape(END_BODY)).openapi("EndedCallSchemaForInsert");
/** A finished call in one record, start and end fields together. Unknown keys are ignored, as in starts and ends. */
export const CompletedCallSchemaForInsert = z.object(bodyShape(COMPLETE_BODY)).openapi("CompletedCallSchemaForInsert");

export const CallStartReq = z.object({ start: StartedCallSchemaForInsert }).openapi("CallStartReq");
export const CallStartRes = z.object({ id: z.string(), trace_id: z.string() }).openapi("CallStartRes");
export const CallEndReq = z.object({ end: EndedCallSchemaForInsert }).openapi("CallEndReq");

/** The most calls one `/v2/{entity}/{project}/calls/complete` takes (the SDK sends up to 1,000). */
export const MAX_COMPLETE_BATCH = 10_000;
export const CallsUpsertCompleteReq = z
  .object({ batch: z.array(CompletedCallSchemaForInsert).max(MAX_COMPLETE_BATCH) })
  .openapi("CallsUpsertCompleteReq");
export const CallStartV2Req = z.object({ start: StartedCallSchemaForInsert }).openapi("CallStartV2Req");
export const CallEndV2Req = z.object({ end: EndedCallSchemaForInsert }).openapi("CallEndV2Req");

export const UpsertBatchItem = z.discriminatedUnion("mode", [
  z.object({ mode: z.literal("start"), req: CallStartReq }),
  z.object({ mode: z.literal("end"), req: CallEndReq }),
]);
export type UpsertBatchItem = z.infer<typeof UpsertBatchItem>;
export const CallCreateBatchReq = z
  .object({ batch: z.array(UpsertBatchItem).max(10_000) })
  .openapi("CallCreateBatchReq");
export const CallCreateBatchRes = z
  .object({ res: z.array(z.union([CallStartRes, z.object({})])) })
  .openapi("CallCreateBatchRes");

export const CallUpdateReq = z
  .object({
    project_id: ProjectId,
    call_id: z.string().min(1),
    display_name: z.string().max(2048),
    wb_user_id: z.string().nullish(),
  })
  .openapi("CallUpdateReq");

export const MAX_DELETE_IDS = 1000;
export const CallsDeleteReq = z
  .object({
    project_id: ProjectId,
    call_ids: z.array(z.string().min(1)).min(1).max(MAX_DELETE_IDS),
    wb_user_id: z.string().nullish(),
  })
  .openapi("CallsDeleteReq");
export const CallsDeleteRes = z.object({ num_deleted: z.number().int() }).openapi("CallsDeleteRes");

const StringList = z.array(z.string()).nullish();

export const CallsFilter = z
  .object({
    op_names: StringList,
    input_refs: StringList,
    output_refs: StringList,
    parent_ids: StringList,
    trace_ids: StringList,
    call_ids: StringList,
    thread_ids: StringList,
    turn_ids: StringList,
    trace_roots_only: z.boolean().nullish(),
    svc_user_ids: StringList,
    svc_run_ids: StringList,
    wb_user_ids: StringList,
    wb_run_ids: StringList,
  })
  .openapi("CallsFilter");
export type CallsFilter = z.infer<typeof CallsFilter>;

export const CallsQueryReq = z
  .object({
    project_id: ProjectId,
    filter: CallsFilter.nullish(),
    limit: Limit,
    offset: Offset,
    sort_by: z.array(SortBy).max(10).nullish(),
    query: QuerySchema.nullish(),
    include_costs: z.boolean().nullish(),
    include_feedback: z.boolean().nullish(),
    include_storage_size: z.boolean().nullish(),
    include_total_storage_size: z.boolean().nullish(),
    include_usernames: z.boolean().nullish(),
    columns: z.array(z.string()).nullish(),
    expand_columns: z.array(z.string()).nullish(),
    return_expanded_column_values: z.boolean().nullish(),
  })
  .openapi("CallsQueryReq");
export type CallsQueryReq = z.infer<typeof CallsQueryReq>;

export const CallsQueryStatsReq = z
  .object({
    project_id: ProjectId,
    filter: CallsFilter.nullish(),
    query: QuerySchema.nullish(),
    limit: Limit,
    include_total_storage_size: z.boolean().nullish(),
    expand_columns: z.array(z.string()).nullish(),
  })
  .openapi("CallsQueryStatsReq");
export const CallsQueryStatsRes = z
  .object({ count: z.number().int(), has_more: z.boolean().optional(), total_storage_size_bytes: z.number().int().nullish() })
  .openapi("CallsQueryStatsRes");

export const CallReadReq = z
  .object({
    project_id: ProjectId,
    id: z.string().min(1),
    include_costs: z.boolean().nullish(),
    include_storage_size: z.boolean().nullish(),
    include_total_storage_size: z.boolean().nullish(),
  })
  .openapi("CallReadReq");

/** A shown call field in CallSchema, by its type: times as ISO 8601 text; JSON as JSON. */
const SHOWN_ZOD = {
  string: z.string(),
  int: z.number(),
  datetime: z.string(),
  json_object: JsonObject,
  json_value: z.unknown(),
} satisfies Record<CallFieldType, z.ZodType>;

type ShownZod<S extends CallFieldSpec> = S["type"] extends "json_value"
  ? (typeof SHOWN_ZOD)["json_value"]
  : NullableInRow<S> extends true
    ? z.ZodNullable<(typeof SHOWN_ZOD)[S["type"]]>
    : (typeof SHOWN_ZOD)[S["type"]];

/** The shown call fields (contract/callFields.ts) in CallSchema's order; NULL where a row may hold it (any JSON already includes null). */
function shownFields(): { [K in (typeof SHOWN_ORDER)[number]]: ShownZod<(typeof CALL_FIELDS)[K]> } {
  const entries = SHOWN_ORDER.map((name) => {
    const spec: CallFieldSpec = CALL_FIELDS[name];
    const zod: z.ZodType = SHOWN_ZOD[spec.type];
    return [name, spec.type !== "json_value" && nullableInRow(spec) ? zod.nullable() : zod];
  });
  return Object.fromEntries(entries) as never;
}

export const CallSchema = z
  .object({
    ...shownFields(),
    deleted_at: z.string().nullable(),
    storage_size_bytes: z.number().nullish(),
    total_storage_size_bytes: z.number().nullish(),
    wb_username: z.string().optional(),
  })
  .openapi("CallSchema");
export type CallSchema = z.infer<typeof CallSchema>;

export const CallReadRes = z.object({ call: CallSchema.nullable() }).openapi("CallReadRes");
