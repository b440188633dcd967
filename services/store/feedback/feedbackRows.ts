import type { FeedbackCreateReq, FeedbackSchema } from "../../contract/feedback.js";
import { flattenPayload, type Payload } from "./payload.js";
import { feedbackTarget } from "./refs.js";
import { microsToIso } from "../../times.js";

/** One `feedback` row as it is inserted (see schema.ts). */
export interface FeedbackRow {
  project_id: string;
  id: string;
  weave_ref: string;
  call_id: string;
  feedback_type: string;
  payload: string;
  payload_paths: string[];
  payload_values: string[];
  creator: string | null;
  annotation_ref: string | null;
  runnable_ref: string | null;
  call_ref: string | null;
  trigger_ref: string | null;
  queue_id: string | null;
  wb_user_id: string;
  created_at: number;
  deleted: 0 | 1;
  version: number;
}

/** The API columns of a row as ClickHouse returns them (Int64 as a string). */
export type FeedbackReadRow = Omit<FeedbackRow, "payload_paths" | "payload_values" | "created_at" | "deleted" | "version" | "call_id"> & {
  created_at: string | number;
};

/** Columns read to answer a feedback, in the order of the API record. */
export const API_COLUMNS = [
  "id", "project_id", "weave_ref", "wb_user_id", "creator", "created_at", "feedback_type", "payload",
  "annotation_ref", "runnable_ref", "call_ref", "trigger_ref", "queue_id",
] as const;

/** Every column, in table order (for INSERT ... SELECT). */
export const ALL_COLUMNS = [
  "project_id", "id", "weave_ref", "call_id", "feedback_type", "payload", "payload_paths", "payload_values", "creator",
  "annotation_ref", "runnable_ref", "call_ref", "trigger_ref", "queue_id", "wb_user_id", "created_at", "deleted", "version",
] as const;

export interface NewFeedback {
  readonly req: FeedbackCreateReq;
  readonly id: string;
  readonly payload: Payload;
  readonly wbUserId: string;
  readonly createdAt: number;
}

/** A validated create request → its row (version = created_at: later writes win). */
export function newFeedbackRow(f: NewFeedback): FeedbackRow {
  const ref = feedbackTarget(f.req.weave_ref);
  const orNull = (v: string | null | undefined) => v ?? null;
  return {
    project_id: f.req.project_id,
    id: f.id,
    weave_ref: f.req.weave_ref,
    call_id: ref?.projectId === f.req.project_id && ref.callId !== null ? ref.callId : "",
    feedback_type: f.req.feedback_type,
    payload: JSON.stringify(f.payload),
    ...flattenPayload(f.payload),
    creator: orNull(f.req.creator),
    annotation_ref: orNull(f.req.annotation_ref),
    runnable_ref: orNull(f.req.runnable_ref),
    call_ref: orNull(f.req.call_ref),
    trigger_ref: orNull(f.req.trigger_ref),
    queue_id: orNull(f.req.queue_id),
    wb_user_id: f.wbUserId,
    created_at: f.createdAt,
    deleted: 0,
    version: f.createdAt,
  };
}

/** The tombstone that deletes `id`: same key, `deleted = 1`, a higher version. */
export function tombstoneRow(projectId: string, id: string, version: number): FeedbackRow {
  return {
    project_id: projectId, id, weave_ref: "", call_id: "", feedback_type: "", payload: "{}", payload_paths: [], payload_values: [],
    creator: null, annotation_ref: null, runnable_ref: null, call_ref: null, trigger_ref: null, queue_id: null,
    wb_user_id: "", created_at: 0, deleted: 1, version,
  };
}

/** A stored row → the API record (only the columns that were read). */
export function toFeedbackSchema(row: Partial<FeedbackReadRow>): Partial<FeedbackSchema> {
  const out: Record<string, unknown> = {};
  for (const column of API_COLUMNS) {
    if (!(column in row)) continue;
    const value = row[column];
    if (column === "created_at") out.created_at = microsToIso(Number(value));
    else if (column === "payload") out.payload = JSON.parse(String(value)) as Payload;
    else out[column] = value ?? null;
  }
  return out as Partial<FeedbackSchema>;
}
