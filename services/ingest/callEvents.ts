import type { z } from "zod";
import type { EndedCallSchemaForInsert, StartedCallSchemaForInsert } from "../contract/calls.js";
import type { CallEndEvent, CallStartEvent } from "../queue/events.js";
import { uuidv7 } from "../ids.js";
import type { JsonObject, JsonValue } from "../json.js";
import { isoToMicros } from "../times.js";

type StartInput = z.output<typeof StartedCallSchemaForInsert>;
type EndInput = z.output<typeof EndedCallSchemaForInsert>;

/** Validated by the contract already, so the parse cannot fail here. */
const micros = (iso: string): number => isoToMicros(iso) ?? 0;

export function toStartEvent(start: StartInput, username: string): CallStartEvent {
  return {
    kind: "call_start",
    project_id: start.project_id,
    id: start.id ?? uuidv7(),
    trace_id: start.trace_id ?? uuidv7(),
    parent_id: start.parent_id ?? null,
    thread_id: start.thread_id ?? null,
    turn_id: start.turn_id ?? null,
    op_name: start.op_name,
    display_name: start.display_name ?? null,
    started_at: micros(start.started_at),
    attributes: start.attributes as JsonObject,
    inputs: start.inputs as JsonObject,
    otel_dump: (start.otel_dump ?? null) as JsonObject | null,
    wb_user_id: username,
    wb_run_id: start.wb_run_id ?? null,
    wb_run_step: start.wb_run_step ?? null,
  };
}

export function toEndEvent(end: EndInput): CallEndEvent {
  return {
    kind: "call_end",
    project_id: end.project_id,
    id: end.id,
    ended_at: micros(end.ended_at),
    exception: end.exception ?? null,
    output: (end.output ?? null) as JsonValue,
    summary: end.summary as JsonObject,
    wb_run_step_end: end.wb_run_step_end ?? null,
  };
}
