/**
 * The API's shapes the UI reads, taken from the zod contract (services/contract/*.ts) as
 * types only: nothing of the contract is bundled. The contract says `unknown` where any JSON
 * may stand; here that is `Json`.
 */
import type { KeyCreateRes, KeyRole, KeySummary, MeRes } from "../../services/contract/adminKeys.js";
import type { AlertCreateReq, AlertRule as ContractAlertRule } from "../../services/contract/alerts.js";
import type { AnnotationQueueItemSchema, AnnotationQueueSchema, AnnotationState as ContractAnnotationState } from "../../services/contract/annotationQueues.js";
import type { CallSchema } from "../../services/contract/calls.js";
import type { CallLogRecordsRes } from "../../services/contract/otelLogs.js";
import type { EvalResultsQueryRes } from "../../services/contract/evalResults.js";
import type { FeedbackSchema } from "../../services/contract/feedback.js";
import type { MonitorStatusRes } from "../../services/contract/monitors.js";
import type { ObjSchema } from "../../services/contract/objects.js";
import type { ProjectSettingsRes, ProjectSummary } from "../../services/contract/projects.js";
import type { TableRowSchema } from "../../services/contract/tables.js";
import type { ThreadSchema } from "../../services/contract/threads.js";
import type { UsageRes } from "../../services/contract/usage.js";
import type { z } from "../../services/contract/zod.js";

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A contract type with every `unknown` read as JSON. */
type AsJson<T> = unknown extends T ? Json : T extends readonly (infer U)[] ? AsJson<U>[] : T extends object ? { [K in keyof T]: AsJson<T[K]> } : T;

export type CallStatus = "running" | "success" | "error" | "descendant_error";

/** The fields the server computes into `summary.weave` (services/store/calls/fields.ts). */
interface ComputedSummary {
  weave?: { status?: CallStatus; latency_ms?: number | null; trace_name?: string; costs?: Record<string, CostFigures> };
}

type CallFields = AsJson<CallSchema>;
/** A call as the UI asks for it: the listed columns always, the heavy ones when it selected them. */
export type Call = Pick<CallFields, "id" | "project_id" | "op_name" | "display_name" | "trace_id" | "parent_id" | "thread_id" | "turn_id" | "started_at" | "ended_at" | "exception" | "wb_user_id"> &
  Partial<Pick<CallFields, "attributes" | "inputs" | "output" | "wb_username">> & { summary?: (JsonObject & ComputedSummary) | null };

export interface CostFigures {
  prompt_tokens?: number;
  completion_tokens?: number;
  requests?: number;
  total_tokens?: number;
  prompt_tokens_total_cost?: number;
  completion_tokens_total_cost?: number;
}

export type Thread = ThreadSchema;
/** The answer of `/calls/usage`: per call, per model, the call and its descendants counted once. */
export type CallsUsage = z.infer<typeof UsageRes>;
export type Feedback = AsJson<Pick<FeedbackSchema, "id" | "feedback_type" | "payload" | "created_at" | "wb_user_id" | "trigger_ref">>;
/** A monitor's score on a call: feedback whose `trigger_ref` is the monitor version (`runnable_ref` its scorer). */
export type MonitorScore = AsJson<Pick<FeedbackSchema, "id" | "weave_ref" | "feedback_type" | "payload" | "created_at" | "runnable_ref" | "trigger_ref">>;
/** `POST /monitors/status`: what a monitor version scored and the scorers it cannot run. */
export type MonitorStatus = z.infer<typeof MonitorStatusRes>;
export type ObjVersion = AsJson<ObjSchema>;
export type TableRow = AsJson<z.infer<typeof TableRowSchema>>;
export type Project = z.infer<typeof ProjectSummary>;

export type EvalResults = AsJson<EvalResultsQueryRes>;
export type EvalTrial = EvalResults["rows"][number]["evaluations"][number]["trials"][number];
export type ScorerStats = NonNullable<EvalResults["summary"]>["evaluations"][number]["scorer_stats"][number];

export type AnnotationState = ContractAnnotationState;
export type AnnotationQueue = AnnotationQueueSchema;
export type AnnotationQueueItem = AnnotationQueueItemSchema;

/** The OTLP log records of a call's span (`POST /call/log_records`). */
export type CallLogRecords = z.infer<typeof CallLogRecordsRes>;

/** What a key may do in an entity: viewer, writer or admin, each including the ones before it. */
export type Role = z.infer<typeof KeyRole>;
/** `GET /auth/me`: the key's role per entity; `all_entities` for a key of every entity ("*"). */
export type Me = z.infer<typeof MeRes>;
/** A key as `GET /admin/keys` lists it (never its secret). */
export type ApiKey = z.infer<typeof KeySummary>;
/** The answer of `POST /admin/keys`: the only time the secret (`key`) is shown. */
export type NewApiKey = z.infer<typeof KeyCreateRes>;
/** `GET`/`PUT /projects/{entity}/{project}/settings`: retention and the disk the project's data uses. */
export type ProjectSettings = z.infer<typeof ProjectSettingsRes>;

/** An alert rule as `/alerts/query` lists it: its definition, state, last value and recent changes. */
export type AlertRule = z.infer<typeof ContractAlertRule>;
/** The body of `/alerts/create`. */
export type NewAlertRule = z.infer<typeof AlertCreateReq>;
