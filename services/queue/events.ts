import type { JsonObject, JsonValue } from "../json.js";

/**
 * The one event form that ingest publishes and the worker consumes. Times are integer
 * microseconds since the epoch; JSON-valued fields hold parsed JSON.
 */

export interface CallStartEvent {
  readonly kind: "call_start";
  readonly project_id: string;
  readonly id: string;
  readonly trace_id: string;
  readonly parent_id: string | null;
  readonly thread_id: string | null;
  readonly turn_id: string | null;
  readonly op_name: string;
  readonly display_name: string | null;
  readonly started_at: number;
  readonly attributes: JsonObject;
  readonly inputs: JsonObject;
  readonly otel_dump: JsonObject | null;
  readonly wb_user_id: string | null;
  readonly wb_run_id: string | null;
  readonly wb_run_step: number | null;
}

export interface CallEndEvent {
  readonly kind: "call_end";
  readonly project_id: string;
  readonly id: string;
  readonly ended_at: number;
  readonly exception: string | null;
  readonly output: JsonValue;
  readonly summary: JsonObject;
  readonly wb_run_step_end: number | null;
}

export interface CallUpdateEvent {
  readonly kind: "call_update";
  readonly project_id: string;
  readonly id: string;
  readonly display_name: string;
  readonly updated_at: number;
}

/** The ids already include every descendant of the calls the client named. */
export interface CallsDeleteEvent {
  readonly kind: "calls_delete";
  readonly project_id: string;
  readonly ids: readonly string[];
  readonly deleted_at: number;
  readonly wb_user_id: string;
}

export type CallPartEvent = CallStartEvent | CallEndEvent | CallUpdateEvent;
export type TraceEvent = CallPartEvent | CallsDeleteEvent;

/** Partition key: all parts of one call stay in order in one partition. */
export function eventKey(event: TraceEvent): string {
  return event.kind === "calls_delete" ? event.project_id : `${event.project_id}/${event.id}`;
}
