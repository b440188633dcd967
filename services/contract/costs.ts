import { Datetime, EmptyResponse, Limit, Offset, ProjectId } from "./common.js";
import { BODY_PROJECT, operation } from "./operation.js";
import { QuerySchema } from "./queryExpr.js";
import { z } from "./zod.js";

export const MAX_COSTS_PER_CREATE = 1000;

/** The fields of the cost record (`/cost/query` results), in spec order. */
export const COST_RECORD_FIELDS = [
  "id", "llm_id", "prompt_token_cost", "completion_token_cost", "prompt_token_cost_unit",
  "completion_token_cost_unit", "effective_date", "provider_id",
] as const;
export type CostRecordField = (typeof COST_RECORD_FIELDS)[number];

const Cost = z.number().min(0).max(1e6);
const Unit = z.string().min(1).max(32);

export const CostCreateInput = z
  .object({
    prompt_token_cost: Cost.openapi({ description: "Per prompt token." }),
    completion_token_cost: Cost.openapi({ description: "Per completion token." }),
    prompt_token_cost_unit: Unit.nullish().openapi({ description: 'Default "USD".' }),
    completion_token_cost_unit: Unit.nullish().openapi({ description: 'Default "USD".' }),
    effective_date: Datetime.nullish().openapi({ description: "From when the price applies; default now." }),
    provider_id: z.string().min(1).max(256).nullish().openapi({ description: 'Default "default".' }),
    cache_read_input_token_cost: Cost.nullish().openapi({ description: "Stored; not applied to costs yet." }),
    cache_creation_input_token_cost: Cost.nullish().openapi({ description: "Stored; not applied to costs yet." }),
  })
  .openapi("CostCreateInput");

export const CostCreateReq = z
  .object({
    project_id: ProjectId,
    costs: z
      .record(z.string().min(1).max(512), CostCreateInput)
      .refine((c) => Object.keys(c).length > 0, "at least one cost")
      .refine((c) => Object.keys(c).length <= MAX_COSTS_PER_CREATE, `at most ${MAX_COSTS_PER_CREATE} costs`)
      .openapi({ description: "Prices keyed by llm_id, the model name as it appears in summary.usage." }),
    wb_user_id: z.string().nullish().openapi({ description: "Ignored: the server fills it from the key" }),
  })
  .openapi("CostCreateReq");
export type CostCreateReq = z.infer<typeof CostCreateReq>;

export const CostCreateRes = z
  .object({ ids: z.array(z.tuple([z.string(), z.string()])).openapi({ description: "[llm_id, cost id] per created price, in request order." }) })
  .openapi("CostCreateRes");

export const CostField = z.enum(COST_RECORD_FIELDS);

export const CostQueryReq = z
  .object({
    project_id: ProjectId,
    fields: z.array(CostField).nullish().openapi({ description: "Fields of each result; all when absent or empty." }),
    query: QuerySchema.nullish().openapi({ description: "Over the cost fields; see services/store/costs/recordFields.ts for the rules." }),
    sort_by: z
      .array(z.object({ field: CostField, direction: z.enum(["asc", "desc"]) }))
      .max(8)
      .nullish()
      .openapi({ description: "Default llm_id asc, effective_date desc; id breaks ties." }),
    limit: Limit,
    offset: Offset,
  })
  .openapi("CostQueryReq", { description: "The project's own prices (the shipped defaults are not listed)." });
export type CostQueryReq = z.infer<typeof CostQueryReq>;

export const CostQueryOutput = z
  .object({
    id: z.string(),
    llm_id: z.string(),
    prompt_token_cost: z.number(),
    completion_token_cost: z.number(),
    prompt_token_cost_unit: z.string(),
    completion_token_cost_unit: z.string(),
    effective_date: z.string(),
    provider_id: z.string(),
  })
  .partial()
  .openapi("CostQueryOutput");

export const CostQueryRes = z.object({ results: z.array(CostQueryOutput) }).openapi("CostQueryRes");

export const CostPurgeReq = z
  .object({ project_id: ProjectId, query: QuerySchema.openapi({ description: "Required: the project's prices it matches are deleted." }) })
  .openapi("CostPurgeReq");

const TAG = "Costs";

export const costCreateOp = operation({ id: "cost_create", method: "post", path: "/cost/create", summary: "Create project prices per model", tag: TAG, body: CostCreateReq, role: "writer", scope: BODY_PROJECT, response: CostCreateRes, retries: "recorded" });
export const costQueryOp = operation({ id: "cost_query", method: "post", path: "/cost/query", summary: "Query the project's prices", tag: TAG, body: CostQueryReq, role: "viewer", scope: BODY_PROJECT, response: CostQueryRes });
export const costPurgeOp = operation({ id: "cost_purge", method: "post", path: "/cost/purge", summary: "Delete the project's prices a query matches", tag: TAG, body: CostPurgeReq, role: "admin", scope: BODY_PROJECT, response: EmptyResponse });
