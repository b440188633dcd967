/** The API's shapes the UI reads (services/contract/*.ts), as far as it reads them. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type CallStatus = "running" | "success" | "error" | "descendant_error";

export interface Call {
  id: string;
  project_id: string;
  op_name: string;
  display_name: string | null;
  trace_id: string;
  parent_id: string | null;
  thread_id: string | null;
  turn_id: string | null;
  started_at: string;
  ended_at: string | null;
  exception: string | null;
  attributes?: JsonObject;
  inputs?: JsonObject;
  output?: Json;
  summary?: JsonObject & { weave?: { status?: CallStatus; latency_ms?: number | null; trace_name?: string; costs?: Record<string, CostFigures> } };
  wb_user_id: string | null;
  wb_username?: string;
}

export interface CostFigures {
  prompt_tokens?: number;
  completion_tokens?: number;
  requests?: number;
  total_tokens?: number;
  prompt_tokens_total_cost?: number;
  completion_tokens_total_cost?: number;
}

export interface Thread {
  thread_id: string;
  turn_count: number;
  start_time: string;
  last_updated: string;
  first_turn_id: string | null;
  last_turn_id: string | null;
  p50_turn_duration_ms: number | null;
  p99_turn_duration_ms: number | null;
}

export interface Feedback {
  id: string;
  feedback_type: string;
  payload: JsonObject;
  created_at: string;
  wb_user_id: string;
}

export interface ObjVersion {
  project_id: string;
  object_id: string;
  created_at: string;
  digest: string;
  version_index: number;
  is_latest: number;
  kind: "op" | "object";
  base_object_class: string | null;
  leaf_object_class: string | null;
  val: Json;
  tags: string[] | null;
  aliases: string[] | null;
}

export interface TableRow {
  digest: string;
  val: Json;
  original_index: number;
}

export interface Project {
  entity: string;
  name: string;
  project_id: string;
  description: string | null;
}

/** One trial of a dataset row in `POST /v2/{e}/{p}/eval_results/query` (services/contract/evalResults.ts). */
export interface EvalTrial {
  predict_and_score_call_id: string;
  predict_call_id?: string | null;
  model_output?: Json;
  scores: JsonObject;
  model_latency_seconds?: number | null;
  total_tokens?: number | null;
  total_cost?: number | null;
}

export interface ScorerStats {
  scorer_key: string;
  path?: string | null;
  value_type?: "binary" | "continuous" | null;
  numeric_mean?: number | null;
  pass_rate?: number | null;
}

export interface EvalResults {
  rows: { row_digest: string; raw_data_row?: Json; evaluations: { evaluation_call_id: string; trials: EvalTrial[] }[] }[];
  total_rows: number;
  summary?: {
    row_count: number;
    evaluations: { evaluation_call_id: string; trial_count: number; evaluation_ref?: string | null; model_ref?: string | null; display_name?: string | null; scorer_stats: ScorerStats[] }[];
  } | null;
  warnings: string[];
}

export type AnnotationState = "unstarted" | "in_progress" | "completed" | "skipped";

export interface AnnotationQueue {
  id: string;
  name: string;
  description: string;
  scorer_refs: string[];
  created_at: string;
  created_by: string;
}

export interface AnnotationQueueItem {
  id: string;
  call_id: string;
  call_op_name: string;
  call_started_at: string;
  display_fields: string[];
  annotation_state: AnnotationState;
  annotator_user_id: string | null;
  position_in_queue: number | null;
}
