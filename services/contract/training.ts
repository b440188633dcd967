import { JsonObject } from "./common.js";
import { ANY_KEY, LOOKED_UP_PROJECT, operation, PUBLIC } from "./operation.js";
import { z } from "./zod.js";

/**
 * The training API (spec: training-api.md): models and their checkpoints, trajectory logs,
 * RL and SFT training jobs and their events, health. Bodies accept unknown fields (ART sends
 * more than it documents); what each route does is written in services/training/trainingRoutes.ts.
 */

const TAG = "Training";
export const MAX_LIST_LIMIT = 100;
export const DEFAULT_LIST_LIMIT = 20;

const Name = z.string().min(1).max(256).regex(/^[^/\s]+$/, "must be one path segment without whitespace");
const Uuid = z.string().min(1).max(64);

export const ModelCreateReq = z
  .object({
    entity: Name.nullish().openapi({ description: "null or absent: the key's default entity" }),
    project: Name,
    name: Name,
    base_model: z.string().min(1).max(256),
    return_existing: z.boolean().nullish(),
  })
  .openapi("TrainingModelCreateReq");
export type ModelCreateReq = z.infer<typeof ModelCreateReq>;

export const TrainingModel = z
  .object({ id: z.string(), entity: z.string(), project: z.string(), name: z.string(), base_model: z.string(), run_id: z.string().nullable() })
  .openapi("TrainingModel");
export type TrainingModel = z.infer<typeof TrainingModel>;

export const ModelParams = z.object({ model_id: Uuid });
export const JobParams = z.object({ job_id: Uuid });

export const ModelDeleteRes = z
  .object({ model_id: z.string(), deleted_checkpoints: z.number().int(), deleted_run: z.boolean() })
  .openapi("TrainingModelDeleteRes");

/** `after` (exclusive cursor: the id of the last item seen), `limit` 1–100 (default 20). */
const Limit = z.coerce.number().int().min(1).max(MAX_LIST_LIMIT).default(DEFAULT_LIST_LIMIT);
const After = z.string().min(1).max(64).optional();
export const CheckpointsQuery = z.object({ after: After, limit: Limit, order: z.enum(["asc", "desc"]).default("asc") });
export type CheckpointsQuery = z.infer<typeof CheckpointsQuery>;
export const EventsQuery = z.object({ after: After, limit: Limit });
export type EventsQuery = z.infer<typeof EventsQuery>;

const listOf = <T extends z.ZodType>(item: T, name: string) =>
  z
    .object({ object: z.literal("list"), data: z.array(item), first_id: z.string().nullable(), last_id: z.string().nullable(), has_more: z.boolean() })
    .openapi(name);

export const Checkpoint = z.object({ id: z.string(), step: z.number().int(), metrics: z.record(z.string(), z.number()) }).openapi("TrainingCheckpoint");
export type Checkpoint = z.infer<typeof Checkpoint>;
export const CheckpointsList = listOf(Checkpoint, "TrainingCheckpointList");

export const CheckpointsDeleteReq = z.object({ steps: z.array(z.number().int().min(0)).max(10_000) }).openapi("TrainingCheckpointsDeleteReq");
export const CheckpointsDeleteRes = z
  .object({ deleted_count: z.number().int(), not_found_steps: z.array(z.number().int()) })
  .openapi("TrainingCheckpointsDeleteRes");

/** One item of `messages_and_choices`: a chat message (context) or an OpenAI choice (trainable). */
const Message = z.looseObject({ role: z.string(), content: z.unknown().optional() });
const LogprobToken = z.looseObject({ token: z.string().optional(), logprob: z.number(), bytes: z.array(z.number().int()).nullish() });
const Choice = z.looseObject({
  finish_reason: z.string().nullish(),
  index: z.number().int().nullish(),
  logprobs: z.looseObject({ content: z.array(LogprobToken).nullish() }).nullish(),
  message: z.looseObject({ role: z.string(), content: z.string().nullish() }),
});
export const MessageOrChoice = z.union([Choice, Message]);
export type MessageOrChoice = z.infer<typeof MessageOrChoice>;

export const Trajectory = z.looseObject({
  messages_and_choices: z.array(MessageOrChoice),
  reward: z.number(),
  metrics: z.record(z.string(), z.unknown()).nullish(),
});
export type Trajectory = z.infer<typeof Trajectory>;
export const TrajectoryGroup = z.looseObject({ trajectories: z.array(Trajectory) }).openapi("TrajectoryGroup");
export type TrajectoryGroup = z.infer<typeof TrajectoryGroup>;
const Groups = z.array(TrajectoryGroup).max(10_000);

export const ModelLogReq = z
  .object({ model_id: Uuid.nullish(), trajectory_groups: Groups, split: z.string().min(1).max(64).default("val") })
  .openapi("TrainingModelLogReq");
export const EmptyRes = z.object({}).openapi("TrainingEmptyRes");

/** Every key may be null: ART sends the whole config with its unset keys as null. */
export const RlExperimentalConfig = z
  .looseObject({
    learning_rate: z.number().positive().nullish(),
    epsilon: z.number().positive().nullish(),
    epsilon_high: z.number().positive().nullish(),
    normalize_advantages: z.boolean().nullish(),
    loss_fn: z.enum(["ppo", "cispo"]).nullish(),
  })
  .openapi("TrainingExperimentalConfig");
export type RlExperimentalConfig = z.infer<typeof RlExperimentalConfig>;

export const RlJobCreateReq = z
  .object({ model_id: Uuid, trajectory_groups: Groups.min(1), experimental_config: RlExperimentalConfig.nullish() })
  .openapi("TrainingJobCreateReq");
export type RlJobCreateReq = z.infer<typeof RlJobCreateReq>;

export const SftConfig = z
  .looseObject({
    batch_size: z.union([z.number().int().min(1).max(4096), z.literal("auto")]).nullish(),
    learning_rate: z.union([z.number().positive(), z.array(z.number().positive()).min(1).max(100_000)]).nullish(),
    assistant_turns: z.enum(["all", "last"]).nullish(),
  })
  .openapi("SftTrainingConfig");
export type SftConfig = z.infer<typeof SftConfig>;

const DataUrl = z.string().min(1).max(4096);
/** `training_folder_url` is the field's older name (ART before 0.5); one of the two is required. */
export const SftJobCreateReq = z
  .object({
    model_id: Uuid,
    training_data_url: DataUrl.nullish(),
    training_folder_url: DataUrl.nullish(),
    config: SftConfig.nullish(),
    experimental_config: JsonObject.nullish(),
  })
  .refine((r) => !!(r.training_data_url ?? r.training_folder_url), { message: "training_data_url is required", path: ["training_data_url"] })
  .openapi("SftTrainingJobCreateReq");
export type SftJobCreateReq = z.infer<typeof SftJobCreateReq>;

export const JobCreateRes = z.object({ id: z.string() }).openapi("TrainingJobCreateRes");

export const JOB_STATUSES = ["QUEUED", "RUNNING", "COMPLETED", "FAILED"] as const;
export type TrainingJobStatus = (typeof JOB_STATUSES)[number];
export const TrainingJob = z
  .object({
    id: z.string(),
    status: z.enum(JOB_STATUSES),
    model_id: z.string(),
    kind: z.enum(["rl", "sft"]),
    created_at: z.string(),
    training_start: z.string().nullable(),
    training_end: z.string().nullable(),
    error_message: z.string().nullable(),
  })
  .openapi("TrainingJob");
export type TrainingJob = z.infer<typeof TrainingJob>;

export const TRAINING_EVENT_TYPES = ["training_started", "gradient_step", "training_ended", "training_failed"] as const;
export const TrainingEvent = z.object({ id: z.string(), type: z.string(), data: JsonObject }).openapi("TrainingJobEvent");
export type TrainingEvent = z.infer<typeof TrainingEvent>;
export const EventsList = listOf(TrainingEvent, "TrainingJobEventList");

const Check = z.object({ success: z.boolean(), duration: z.number(), errors: z.array(z.string()) });
export type SystemCheck = z.infer<typeof Check>;
export const SystemCheckRes = z.object({ api: Check, database: Check, cpu_queue: Check, gpu_queue: Check }).openapi("SystemCheckRes");
export const TrainingHealthRes = z.object({ status: z.string() }).openapi("TrainingHealthRes");

const BASE = "/v1/preview";
export const modelCreateOp = operation({
  id: "training_model_create", method: "post", path: `${BASE}/models`, summary: "Create a model (or answer the existing one)", tag: TAG,
  body: ModelCreateReq, response: TrainingModel,
  // entity null: the key's default entity, which the key reaches by definition.
  role: "writer",
  scope: { kind: "projects", of: ({ body }) => (body.entity ? [`${body.entity}/${body.project}`] : []) },
});
export const modelDeleteOp = operation({
  id: "training_model_delete", method: "delete", path: `${BASE}/models/{model_id}`, summary: "Delete a model and its checkpoints", tag: TAG,
  params: ModelParams, response: ModelDeleteRes, role: "admin", scope: LOOKED_UP_PROJECT,
});
export const checkpointsListOp = operation({
  id: "training_checkpoints_list", method: "get", path: `${BASE}/models/{model_id}/checkpoints`, summary: "List a model's checkpoints", tag: TAG,
  params: ModelParams, query: CheckpointsQuery, response: CheckpointsList, role: "viewer", scope: LOOKED_UP_PROJECT,
});
export const checkpointsDeleteOp = operation({
  id: "training_checkpoints_delete", method: "delete", path: `${BASE}/models/{model_id}/checkpoints`, summary: "Delete checkpoints by step", tag: TAG,
  params: ModelParams, body: CheckpointsDeleteReq, response: CheckpointsDeleteRes, role: "admin", scope: LOOKED_UP_PROJECT,
});
export const modelLogOp = operation({
  id: "training_model_log", method: "post", path: `${BASE}/models/{model_id}/log`, summary: "Log trajectory groups to a model", tag: TAG,
  params: ModelParams, body: ModelLogReq, response: EmptyRes, role: "writer", scope: LOOKED_UP_PROJECT,
});
export const rlJobCreateOp = operation({
  id: "training_job_create", method: "post", path: `${BASE}/training-jobs`, summary: "Create an RL training job", tag: TAG,
  body: RlJobCreateReq, response: JobCreateRes, role: "writer", scope: LOOKED_UP_PROJECT,
});
export const sftJobCreateOp = operation({
  id: "sft_training_job_create", method: "post", path: `${BASE}/sft-training-jobs`, summary: "Create an SFT training job", tag: TAG,
  body: SftJobCreateReq, response: JobCreateRes, role: "writer", scope: LOOKED_UP_PROJECT,
});
export const jobReadOp = operation({
  id: "training_job_read", method: "get", path: `${BASE}/training-jobs/{job_id}`, summary: "Read a training job", tag: TAG,
  params: JobParams, response: TrainingJob, role: "viewer", scope: LOOKED_UP_PROJECT,
});
export const jobEventsOp = operation({
  id: "training_job_events", method: "get", path: `${BASE}/training-jobs/{job_id}/events`, summary: "List a training job's events", tag: TAG,
  params: JobParams, query: EventsQuery, response: EventsList, role: "viewer", scope: LOOKED_UP_PROJECT,
});
export const trainingHealthOp = operation({
  id: "training_health", method: "get", path: "/v1/health", summary: "Health check", tag: TAG, response: TrainingHealthRes, role: null, scope: PUBLIC,
});
export const systemCheckOp = operation({
  id: "system_check", method: "get", path: "/v1/system-check", summary: "System check: API, database, job queues (503 when one fails)", tag: TAG,
  response: SystemCheckRes, role: "viewer", scope: ANY_KEY,
});
