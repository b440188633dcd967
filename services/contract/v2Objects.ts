import { Datetime, JsonObject, V2ProjectParams } from "./common.js";
import { ObjectId } from "./objects.js";
import { operation, PATH_PROJECT } from "./operation.js";
import { z } from "./zod.js";

/**
 * The object-backed families under `/v2/{entity}/{project}/` (spec: tracing-api-evaluation.md,
 * "/v2/ resources"): ops, datasets, scorers, evaluations, models. Each is stored as an ordinary
 * object (so `/obj/read` and `/objs/query` see it); what each stores is written in
 * services/store/v2/v2Objects.ts.
 */

const TAG = "V2 objects";

/** A query-string list: `a,b` or the parameter repeated. */
export const QueryList = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(",")).map((s) => s.trim()).filter((s) => s !== ""));

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(0).optional(),
  offset: z.coerce.number().int().min(0).optional(),
});

const ObjectParams = V2ProjectParams.extend({ object_id: ObjectId });
const VersionParams = ObjectParams.extend({ digest: z.string().min(1).max(256) });
const DeleteQuery = z.object({ digests: QueryList.optional() });
const Ref = z.string().min(1).openapi({ example: "weave:///acme/agents/object/my-dataset:3Qx..." });
const Name = z.string().min(1).max(128);
const SourceCode = z.string().max(1024 * 1024);

const Created = z.object({ digest: z.string(), object_id: z.string(), version_index: z.number().int() });
const VersionBase = z.object({ object_id: z.string(), digest: z.string(), version_index: z.number().int(), created_at: Datetime });

export const OpCreateBody = z.object({ name: Name.nullish(), source_code: SourceCode.nullish() }).openapi("V2OpCreateBody");
export const OpReadRes = VersionBase.extend({ code: z.string() }).openapi("V2OpReadRes");

export const DatasetCreateBody = z
  .object({ name: Name.nullish(), description: z.string().nullish(), rows: z.array(JsonObject) })
  .openapi("V2DatasetCreateBody");
export const DatasetReadRes = VersionBase.extend({ name: z.string(), description: z.string().nullish(), rows: z.string() }).openapi("V2DatasetReadRes");

export const ScorerCreateBody = z.object({ name: Name, description: z.string().nullish(), op_source_code: SourceCode }).openapi("V2ScorerCreateBody");
export const ScorerReadRes = VersionBase.extend({ name: z.string(), description: z.string().nullish(), score_op: z.string() }).openapi("V2ScorerReadRes");

export const EvaluationCreateBody = z
  .object({
    name: Name,
    description: z.string().nullish(),
    dataset: Ref,
    scorers: z.array(Ref).max(100).nullish(),
    trials: z.number().int().min(1).max(1000).default(1),
    evaluation_name: z.string().nullish(),
    eval_attributes: JsonObject.nullish(),
  })
  .openapi("V2EvaluationCreateBody");
export const EvaluationReadRes = VersionBase.extend({
  name: z.string(),
  description: z.string().nullish(),
  dataset: z.string(),
  scorers: z.array(z.string()),
  trials: z.number().int(),
  evaluation_name: z.string().nullish(),
  evaluate_op: z.string().nullish(),
  predict_and_score_op: z.string().nullish(),
  summarize_op: z.string().nullish(),
}).openapi("V2EvaluationReadRes");

export const ModelCreateBody = z
  .object({ name: Name, description: z.string().nullish(), source_code: SourceCode, attributes: JsonObject.nullish() })
  .openapi("V2ModelCreateBody");
export const ModelReadRes = VersionBase.extend({
  name: z.string(),
  description: z.string().nullish(),
  source_code: z.string(),
  attributes: JsonObject.nullish(),
}).openapi("V2ModelReadRes");

const DeleteRes = z.object({ num_deleted: z.number().int() });

export const V2_OBJECT_FAMILIES = ["ops", "datasets", "scorers", "evaluations", "models"] as const;
export type V2ObjectFamily = (typeof V2_OBJECT_FAMILIES)[number];

/** The four operations of one family; `id` prefixes and paths follow the family name. */
function familyOps<B extends z.ZodType, C extends z.ZodType, R extends z.ZodType>(family: V2ObjectFamily, one: string, body: B, created: C, read: R, keepBodyText = false) {
  const base = `/v2/{entity}/{project}/${family}`;
  return {
    list: operation({ id: `v2_${family}_list`, method: "get", path: base, summary: `List ${family} (JSON lines)`, tag: TAG, params: V2ProjectParams, query: ListQuery, role: "viewer", scope: PATH_PROJECT, response: read, streamed: true }),
    create: operation({ id: `v2_${family}_create`, method: "post", path: base, summary: `Create a version of a ${one}`, tag: TAG, params: V2ProjectParams, body, role: "writer", scope: PATH_PROJECT, response: created, keepBodyText }),
    delete: operation({ id: `v2_${family}_delete`, method: "delete", path: `${base}/{object_id}`, summary: `Delete versions of a ${one} (all without digests)`, tag: TAG, params: ObjectParams, query: DeleteQuery, role: "admin", scope: PATH_PROJECT, response: DeleteRes }),
    read: operation({ id: `v2_${family}_read`, method: "get", path: `${base}/{object_id}/versions/{digest}`, summary: `Read one version of a ${one}`, tag: TAG, params: VersionParams, role: "viewer", scope: PATH_PROJECT, response: read }),
  };
}

export const opsOps = familyOps("ops", "op", OpCreateBody, Created, OpReadRes);
// A dataset's rows are digested as sent (lossless: `1.0` stays a float), like /table/create's.
export const datasetsOps = familyOps("datasets", "dataset", DatasetCreateBody, Created, DatasetReadRes, true);
export const scorersOps = familyOps("scorers", "scorer", ScorerCreateBody, Created.extend({ scorer: z.string() }), ScorerReadRes);
export const evaluationsOps = familyOps("evaluations", "evaluation", EvaluationCreateBody, Created.extend({ evaluation_ref: z.string() }), EvaluationReadRes);
export const modelsOps = familyOps("models", "model", ModelCreateBody, Created.extend({ model_ref: z.string() }), ModelReadRes);

export type OpCreateBody = z.output<typeof OpCreateBody>;
export type DatasetCreateBody = z.output<typeof DatasetCreateBody>;
export type ScorerCreateBody = z.output<typeof ScorerCreateBody>;
export type EvaluationCreateBody = z.output<typeof EvaluationCreateBody>;
export type ModelCreateBody = z.output<typeof ModelCreateBody>;
