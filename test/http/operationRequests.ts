import { baseModels } from "../../services/lm/index.js";

/**
 * One request per mounted operation, shared by the tests that go over every operation
 * (test/http/scope.test.ts, test/hostile/): a request that passes validation and names
 * PROJECT (or, for key-only operations, a body any key may send). A new operation has a
 * row here; scope.test.ts fails until it has one.
 */
export const PROJECT = "acme/scoped";
export const NOW = "2026-11-21T10:00:00.000000Z";
export const QUERY = { $expr: { $eq: [{ $getField: "id" }, { $literal: "x" }] } };
export const START = { project_id: PROJECT, id: "c1", trace_id: "t1", op_name: "op", started_at: NOW, attributes: {}, inputs: {} };
export const END = { project_id: PROJECT, id: "c1", ended_at: NOW, summary: {} };
export const FEEDBACK = { project_id: PROJECT, weave_ref: `weave:///${PROJECT}/call/c1`, feedback_type: "custom", payload: { a: 1 } };

/** A multipart upload naming PROJECT, then a file (a PNG, so that /image/create would accept it). */
export const UPLOAD: [string, string | Uint8Array][] = [["project_id", PROJECT], ["file", Buffer.from("89504e470d0a1a0a0000000d49484452", "hex")]];

/**
 * A request that passes validation and names PROJECT, per operation id: a JSON `body`, or a
 * multipart `form` (its parts in order) for operations whose project comes inside a streamed body.
 */
export const PROJECT_REQUESTS: Record<string, { body?: unknown; form?: [string, string | Uint8Array][]; headers?: Record<string, string>; path?: string }> = {
  call_start: { body: { start: START } },
  call_end: { body: { end: END } },
  call_upsert_batch: { body: { batch: [{ mode: "start", req: { start: START } }, { mode: "end", req: { end: END } }] } },
  call_update: { body: { project_id: PROJECT, call_id: "c1", display_name: "renamed" } },
  calls_delete: { body: { project_id: PROJECT, call_ids: ["c1"] } },
  calls_complete: { path: `/v2/${PROJECT}/calls/complete`, body: { batch: [{ ...START, ...END }] } },
  call_start_v2: { path: `/v2/${PROJECT}/call/start`, body: { start: START } },
  call_end_v2: { path: `/v2/${PROJECT}/call/end`, body: { end: { ...END, trace_id: "t1", started_at: NOW } } },
  otel_export_traces: { body: {}, headers: { project_id: PROJECT } },
  otel_export_traces_agents: { body: {}, headers: { project_id: PROJECT } },
  otel_export_traces_langfuse: { body: {}, headers: { project_id: PROJECT } },
  otel_export_logs: { body: {}, headers: { project_id: PROJECT } },
  call_read: { body: { project_id: PROJECT, id: "c1" } },
  call_log_records: { body: { project_id: PROJECT, call_id: "c1" } },
  calls_stream_query: { body: { project_id: PROJECT } },
  calls_query_stats: { body: { project_id: PROJECT } },
  threads_stream_query: { body: { project_id: PROJECT } },
  project_settings_read: { path: `/projects/${PROJECT}/settings` },
  project_settings_update: { path: `/projects/${PROJECT}/settings`, body: { retention_days: 30 } },
  cost_create: { body: { project_id: PROJECT, costs: { "model-x": { prompt_token_cost: 1, completion_token_cost: 2 } } } },
  cost_query: { body: { project_id: PROJECT } },
  alerts_create: { body: { project_id: PROJECT, name: "made by a test", metric: "error_rate", window_minutes: 5, comparison: "gt", threshold: 0.5, webhook_url: "https://hooks.example.com/alerts" } },
  alerts_query: { body: { project_id: PROJECT } },
  alerts_delete: { body: { project_id: PROJECT, id: "no-such-alert" } },
  monitors_status: { body: { project_id: PROJECT, monitor_ref: `weave:///${PROJECT}/object/no-such-monitor:abc` } },
  cost_purge: { body: { project_id: PROJECT, query: QUERY } },
  feedback_create: { body: FEEDBACK },
  feedback_batch_create: { body: { batch: [FEEDBACK] } },
  feedback_query: { body: { project_id: PROJECT } },
  feedback_purge: { body: { project_id: PROJECT, query: QUERY } },
  feedback_replace: { body: { ...FEEDBACK, feedback_id: "f1" } },
  feedback_payload_schema: { body: { project_id: PROJECT } },
  feedback_stats: { body: { project_id: PROJECT, start: NOW, metrics: [] } },
  calls_usage: { body: { project_id: PROJECT, call_ids: ["c1"] } },
  trace_usage: { body: { project_id: PROJECT } },
  calls_stats: { body: { project_id: PROJECT, start: NOW } },
  obj_create: { body: { obj: { project_id: PROJECT, object_id: "o1", val: { a: 1 } } } },
  obj_read: { body: { project_id: PROJECT, object_id: "o1", digest: "latest" } },
  objs_query: { body: { project_id: PROJECT } },
  obj_delete: { body: { project_id: PROJECT, object_id: "o1" } },
  obj_add_tags: { path: "/objs/o1/versions/latest/tags", body: { project_id: PROJECT, tags: ["gold"] } },
  obj_remove_tags: { path: "/objs/o1/versions/latest/tags/remove", body: { project_id: PROJECT, tags: ["gold"] } },
  obj_set_aliases: { path: "/objs/o1/aliases", body: { project_id: PROJECT, digest: "latest", aliases: ["prod"] } },
  obj_remove_aliases: { path: "/objs/o1/aliases/remove", body: { project_id: PROJECT, aliases: ["prod"] } },
  tags_list: { path: `/tags?project_id=${PROJECT}` },
  aliases_list: { path: `/aliases?project_id=${PROJECT}` },
  file_create: { form: UPLOAD },
  files_create: { form: UPLOAD },
  file_content: { body: { project_id: PROJECT, digest: "d" } },
  files_content: { body: { project_id: PROJECT, digest: "d" } },
  files_query_stats: { body: { project_id: PROJECT } },
  files_stats: { body: { project_id: PROJECT } },
  image_create: { form: UPLOAD },
  table_create: { body: { table: { project_id: PROJECT, rows: [{ a: 1 }] } } },
  table_create_from_digests: { body: { project_id: PROJECT, row_digests: ["r1"] } },
  table_update: { body: { project_id: PROJECT, base_digest: "t1", updates: [{ append: { row: { a: 1 } } }] } },
  table_query: { body: { project_id: PROJECT, digest: "t1" } },
  table_query_stream: { body: { project_id: PROJECT, digest: "t1" } },
  table_query_stats: { body: { project_id: PROJECT, digest: "t1" } },
  table_query_stats_batch: { body: { project_id: PROJECT, digests: ["t1"] } },
  refs_read_batch: { body: { refs: [`weave:///${PROJECT}/object/o1:d1`] } },
  annotation_queue_create: { body: { project_id: PROJECT, name: "q", scorer_refs: [] } },
  annotation_queues_query_stream: { body: { project_id: PROJECT } },
  annotation_queue_read: { path: `/annotation_queues/q1?project_id=${PROJECT}` },
  annotation_queue_update: { path: "/annotation_queues/q1", body: { project_id: PROJECT, name: "renamed" } },
  annotation_queue_delete: { path: `/annotation_queues/q1?project_id=${PROJECT}` },
  annotation_queues_stats: { body: { project_id: PROJECT, queue_ids: ["q1"] } },
  annotation_queue_add_calls: { path: "/annotation_queues/q1/items", body: { project_id: PROJECT, call_ids: ["c1"], display_fields: [] } },
  annotation_queue_items_query: { path: "/annotation_queues/q1/items/query", body: { project_id: PROJECT } },
  annotator_queue_items_progress_update: { path: "/annotation_queues/q1/items/i1/progress", body: { project_id: PROJECT, annotation_state: "completed" } },
  v2_ops_list: { path: `/v2/${PROJECT}/ops` },
  v2_ops_create: { path: `/v2/${PROJECT}/ops`, body: { name: "o1", source_code: "def f(): pass" } },
  v2_ops_delete: { path: `/v2/${PROJECT}/ops/o1` },
  v2_ops_read: { path: `/v2/${PROJECT}/ops/o1/versions/d1` },
  v2_datasets_list: { path: `/v2/${PROJECT}/datasets` },
  v2_datasets_create: { path: `/v2/${PROJECT}/datasets`, body: { name: "d1", rows: [{ a: 1 }] } },
  v2_datasets_delete: { path: `/v2/${PROJECT}/datasets/o1` },
  v2_datasets_read: { path: `/v2/${PROJECT}/datasets/o1/versions/d1` },
  v2_scorers_list: { path: `/v2/${PROJECT}/scorers` },
  v2_scorers_create: { path: `/v2/${PROJECT}/scorers`, body: { name: "s1", op_source_code: "def score(): pass" } },
  v2_scorers_delete: { path: `/v2/${PROJECT}/scorers/o1` },
  v2_scorers_read: { path: `/v2/${PROJECT}/scorers/o1/versions/d1` },
  v2_evaluations_list: { path: `/v2/${PROJECT}/evaluations` },
  v2_evaluations_create: { path: `/v2/${PROJECT}/evaluations`, body: { name: "e1", dataset: `weave:///${PROJECT}/object/d1:x` } },
  v2_evaluations_delete: { path: `/v2/${PROJECT}/evaluations/o1` },
  v2_evaluations_read: { path: `/v2/${PROJECT}/evaluations/o1/versions/d1` },
  v2_models_list: { path: `/v2/${PROJECT}/models` },
  v2_models_create: { path: `/v2/${PROJECT}/models`, body: { name: "m1", source_code: "class M: pass" } },
  v2_models_delete: { path: `/v2/${PROJECT}/models/o1` },
  v2_models_read: { path: `/v2/${PROJECT}/models/o1/versions/d1` },
  v2_evaluation_runs_list: { path: `/v2/${PROJECT}/evaluation_runs` },
  v2_evaluation_runs_create: { path: `/v2/${PROJECT}/evaluation_runs`, body: { evaluation: `weave:///${PROJECT}/object/m1:x`, model: `weave:///${PROJECT}/object/m1:x` } },
  v2_evaluation_runs_delete: { path: `/v2/${PROJECT}/evaluation_runs?evaluation_run_ids=r1` },
  v2_evaluation_runs_read: { path: `/v2/${PROJECT}/evaluation_runs/r1` },
  v2_evaluation_runs_finish: { path: `/v2/${PROJECT}/evaluation_runs/r1/finish`, body: {} },
  v2_predictions_list: { path: `/v2/${PROJECT}/predictions` },
  v2_predictions_create: { path: `/v2/${PROJECT}/predictions`, body: { model: `weave:///${PROJECT}/object/m1:x`, inputs: { q: 1 }, output: 2 } },
  v2_predictions_delete: { path: `/v2/${PROJECT}/predictions?prediction_ids=p1` },
  v2_predictions_read: { path: `/v2/${PROJECT}/predictions/p1` },
  v2_predictions_finish: { path: `/v2/${PROJECT}/predictions/p1/finish` },
  v2_scores_list: { path: `/v2/${PROJECT}/scores` },
  v2_scores_create: { path: `/v2/${PROJECT}/scores`, body: { prediction_id: "p1", scorer: `weave:///${PROJECT}/object/m1:x`, value: 1 } },
  v2_scores_delete: { path: `/v2/${PROJECT}/scores?score_ids=s1` },
  v2_scores_read: { path: `/v2/${PROJECT}/scores/s1` },
  v2_eval_results_query: { path: `/v2/${PROJECT}/eval_results/query`, body: { evaluation_call_ids: ["e1"] } },
  evaluate_model: { body: { project_id: PROJECT, evaluation_ref: `weave:///${PROJECT}/object/e1:x`, model_ref: `weave:///${PROJECT}/object/m1:x` } },
  evaluation_status: { body: { project_id: PROJECT, call_id: "c1" } },
  calls_score: { body: { project_id: PROJECT, call_ids: ["c1"], scorer_refs: [`weave:///${PROJECT}/object/s1:x`] } },
  chat_completions: { body: { model: "tracehouse/bytelm-small", messages: [{ role: "user", content: "hi" }], max_tokens: 1 }, headers: { "OpenAI-Project": PROJECT } },
  inference_models_list: { headers: { "Vendor-Project": PROJECT } },
  // Training: `{model_id}` and `{job_id}` are a model of PROJECT and a job of it, made in beforeAll.
  training_model_create: { body: { entity: "acme", project: "scoped", name: "m2", base_model: "tiny" } },
  training_model_delete: { path: "/v1/preview/models/{model_id}" },
  training_checkpoints_list: { path: "/v1/preview/models/{model_id}/checkpoints" },
  training_checkpoints_delete: { path: "/v1/preview/models/{model_id}/checkpoints", body: { steps: [0] } },
  training_model_log: { path: "/v1/preview/models/{model_id}/log", body: { trajectory_groups: [] } },
  training_job_create: { body: { model_id: "{model_id}", trajectory_groups: [{ trajectories: [{ messages_and_choices: [], reward: 1 }] }] } },
  sft_training_job_create: { body: { model_id: "{model_id}", training_data_url: "https://example.invalid/data.jsonl" } },
  training_job_read: { path: "/v1/preview/training-jobs/{job_id}" },
  training_job_events: { path: "/v1/preview/training-jobs/{job_id}/events" },
  trainer_message: { path: "/v1/trainer/jobs/{job_id}/messages", body: { trainer_id: "t1", attempt: 1, seq: 1, type: "heartbeat", data: {} } },
  admin_keys_create: { body: { entity: "acme", role: "viewer", name: "made by a test" } },
  admin_keys_list: { path: "/admin/keys?entity=acme" },
  // `{key_id}`: a key of acme, made in beforeAll.
  admin_keys_delete: { path: "/admin/keys/{key_id}" },
};

/** Operations that name a resource by id (a training model or job): the handler looks up its project and confirms it. */
export const LOOKED_UP = ["admin_keys_delete", "training_model_delete", "training_checkpoints_list", "training_checkpoints_delete", "training_model_log", "training_job_create", "sft_training_job_create", "training_job_read", "training_job_events", "trainer_message"];

/** Operations whose project is named inside a streamed body: the handler confirms it before storing anything. */
export const STREAMED = ["file_create", "files_create", "image_create"];

export function formOf(parts: [string, string | Uint8Array][]): FormData {
  const form = new FormData();
  for (const [name, value] of parts) {
    if (typeof value === "string") form.append(name, value);
    else form.append(name, new Blob([new Uint8Array(value)]), "upload.bin");
  }
  return form;
}

/** Operations that touch no project: any key (or none, for public ones) may call them. */
export const KEY_ONLY_BODIES: Record<string, unknown> = {
  version: undefined,
  server_info: undefined,
  queue_stored: undefined,
  geolocate: undefined,
  projects_info: { project_ids: [PROJECT] },
  projects_list: undefined,
  graphql: { query: "query DefaultEntity { viewer { username } }" },
  inference_analysis_models: undefined,
  inference_hardware: undefined,
  inference_router_models: undefined,
  system_check: undefined,
  trainer_claim: { trainer_id: "t1" },
  auth_me: undefined,
};
export const KEY_ONLY = Object.keys(KEY_ONLY_BODIES);
export const PUBLIC = ["health", "training_health"];

export type OperationRequest = (typeof PROJECT_REQUESTS)[string];

/** What the rows' `{model_id}`, `{job_id}` and `{key_id}` stand for: made by `makeLookedUp`. */
export interface LookedUp {
  readonly model_id: string;
  readonly job_id: string;
  readonly key_id: string;
  /** A row's path or body with its placeholders replaced. */
  fill(text: string): string;
}

/**
 * Makes, with an admin key of acme, what the looked-up operations' rows name: a training model
 * of PROJECT, a job of it whose data is missing (it fails at once, without training), and a key
 * of acme.
 */
export async function makeLookedUp(url: string, adminKey: string, modelName: string): Promise<LookedUp> {
  const post = async <T>(path: string, body: unknown): Promise<T> => {
    const res = await fetch(`${url}${path}`, { method: "POST", headers: { authorization: `Basic ${Buffer.from(`api:${adminKey}`).toString("base64")}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    if (res.status !== 200) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as T;
  };
  const [entity, project] = PROJECT.split("/") as [string, string];
  const model_id = (await post<{ id: string }>("/v1/preview/models", { entity, project, name: modelName, base_model: baseModels()[0]!.id })).id;
  const job_id = (await post<{ id: string }>("/v1/preview/sft-training-jobs", { model_id, training_data_url: `weave:///${PROJECT}/file/missing` })).id;
  const key_id = (await post<{ id: string }>("/admin/keys", { entity, role: "viewer", name: "looked up" })).id;
  const fill = (text: string) => text.replace("{model_id}", model_id).replace("{job_id}", job_id).replace("{key_id}", key_id);
  return { model_id, job_id, key_id, fill };
}
