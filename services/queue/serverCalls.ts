import type { JsonObject, JsonValue } from "../json.js";
import type { CallCompleteEvent, CallEndEvent, CallStartEvent } from "./events.js";

/**
 * The events of the calls the server writes itself: the `/v2/` evaluation families
 * (store/v2/evalCalls.ts) and the evaluation jobs (worker/jobs/evaluationJobs.ts). Such a
 * call has no thread, turn, display name, OTel dump or run; its user is the one who asked.
 */
export interface ServerCallPlace {
  readonly projectId: string;
  readonly id: string;
  readonly traceId: string;
  readonly parentId: string | null;
  readonly user: string;
}

/** What a call the server writes is: its op and what it was given. */
export interface ServerCallContent {
  readonly opName: string;
  readonly inputs: JsonObject;
  readonly attributes: JsonObject;
}

export function serverCallStart(place: ServerCallPlace, startedAt: number, content: ServerCallContent): CallStartEvent {
  return {
    kind: "call_start",
    project_id: place.projectId,
    id: place.id,
    trace_id: place.traceId,
    parent_id: place.parentId,
    thread_id: null,
    turn_id: null,
    op_name: content.opName,
    display_name: null,
    started_at: startedAt,
    attributes: content.attributes,
    inputs: content.inputs,
    otel_dump: null,
    wb_user_id: place.user,
    wb_run_id: null,
    wb_run_step: null,
  };
}

/** A call started and ended in one event. */
export function serverCallComplete(
  place: ServerCallPlace,
  content: ServerCallContent,
  times: { readonly startedAt: number; readonly endedAt: number; readonly summary: JsonObject },
  output: JsonValue,
): CallCompleteEvent {
  return { ...serverCallStart(place, times.startedAt, content), kind: "call_complete", ended_at: times.endedAt, exception: null, output, summary: times.summary, wb_run_step_end: null };
}

/** The end of a call started earlier: its output, or its exception (and no output). */
export function serverCallEnd(
  call: Pick<ServerCallPlace, "projectId" | "id" | "traceId">,
  startedAt: number,
  endedAt: number,
  result: { readonly output: JsonValue; readonly exception: string | null },
): CallEndEvent {
  return {
    kind: "call_end", project_id: call.projectId, id: call.id, ended_at: endedAt, exception: result.exception, output: result.output,
    summary: {}, wb_run_step_end: null, trace_id: call.traceId, started_at: startedAt,
  };
}
