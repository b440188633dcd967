import type { z } from "zod";
import type { CompletedCallSchemaForInsert, EndedCallSchemaForInsert, StartedCallSchemaForInsert, UpsertBatchItem } from "../contract/calls.js";
import { callKey, type CallCompleteEvent, type CallEndEvent, type CallStartEvent, type TraceEvent } from "../queue/events.js";
import { derivedUuidv7, uuidv7 } from "../ids.js";
import type { JsonObject, JsonValue } from "../json.js";
import { isoToMicros } from "../times.js";

type StartInput = z.output<typeof StartedCallSchemaForInsert>;
type EndInput = z.output<typeof EndedCallSchemaForInsert>;
type CompleteInput = z.output<typeof CompletedCallSchemaForInsert>;

/** Validated by the contract already, so the parse cannot fail here. */
const micros = (iso: string): number => isoToMicros(iso) ?? 0;

/**
 * The ids a start leaves out (`id`, `trace_id`), given the start time, the start's position
 * in its request and which id. Without a retry id they are random; under one they are derived
 * from it, so every attempt of a retried request names the same calls and answers the same ids
 * in whichever process it lands: a repeat then rewrites the same rows, which the worker's
 * merge makes harmless. (Deduplicating by a retry id stored with the events instead would need
 * the worker to read it back before each write, on the hot path, for no different result.)
 */
export type IdMaker = (startedAtMicros: number, position: number, field: "id" | "trace_id") => string;

export function idMaker(retryId: string | null, route: string): IdMaker {
  if (retryId === null) return () => uuidv7();
  return (startedAt, position, field) => derivedUuidv7(startedAt / 1000, `${route}\n${retryId}\n${position}\n${field}`);
}

export function toStartEvent(start: StartInput, username: string, ids: IdMaker = idMaker(null, ""), position = 0): CallStartEvent {
  const startedAt = micros(start.started_at);
  return {
    kind: "call_start",
    project_id: start.project_id,
    id: start.id ?? ids(startedAt, position, "id"),
    trace_id: start.trace_id ?? ids(startedAt, position, "trace_id"),
    parent_id: start.parent_id ?? null,
    thread_id: start.thread_id ?? null,
    turn_id: start.turn_id ?? null,
    op_name: start.op_name,
    display_name: start.display_name ?? null,
    started_at: startedAt,
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
    trace_id: end.trace_id || null,
    started_at: end.started_at ? micros(end.started_at) : null,
  };
}

/** A start and its end as one complete call (written out: a spread of the start makes a slower object). */
export function completedCall(start: CallStartEvent, end: CallEndEvent): CallCompleteEvent {
  return {
    kind: "call_complete",
    project_id: start.project_id,
    id: start.id,
    trace_id: start.trace_id,
    parent_id: start.parent_id,
    thread_id: start.thread_id,
    turn_id: start.turn_id,
    op_name: start.op_name,
    display_name: start.display_name,
    started_at: start.started_at,
    attributes: start.attributes,
    inputs: start.inputs,
    otel_dump: start.otel_dump,
    wb_user_id: start.wb_user_id,
    wb_run_id: start.wb_run_id,
    wb_run_step: start.wb_run_step,
    ended_at: end.ended_at,
    exception: end.exception,
    output: end.output,
    summary: end.summary,
    wb_run_step_end: end.wb_run_step_end,
  };
}

export function toCompleteEvent(call: CompleteInput, username: string): CallCompleteEvent {
  return {
    kind: "call_complete",
    project_id: call.project_id,
    id: call.id,
    trace_id: call.trace_id,
    parent_id: call.parent_id ?? null,
    thread_id: call.thread_id ?? null,
    turn_id: call.turn_id ?? null,
    op_name: call.op_name,
    display_name: call.display_name ?? null,
    started_at: micros(call.started_at),
    attributes: call.attributes as JsonObject,
    inputs: call.inputs as JsonObject,
    otel_dump: (call.otel_dump ?? null) as JsonObject | null,
    wb_user_id: username,
    wb_run_id: call.wb_run_id ?? null,
    wb_run_step: call.wb_run_step ?? null,
    ended_at: micros(call.ended_at),
    exception: call.exception ?? null,
    output: (call.output ?? null) as JsonValue,
    summary: (call.summary ?? {}) as JsonObject,
    wb_run_step_end: call.wb_run_step_end ?? null,
  };
}

/**
 * A batch's events, and each part's answer (a start's ids). An end whose start came earlier in
 * the batch goes with it as one complete call, in the start's place: nothing of that call comes
 * between the two, and the worker's merge makes of a complete call what it makes of its start
 * then its end (worker/callMerge.ts), with half the events to log, read back and merge.
 */
export function upsertEvents(batch: readonly UpsertBatchItem[], username: string, ids: IdMaker) {
  const events: TraceEvent[] = [];
  const res: ({ id: string; trace_id: string } | Record<string, never>)[] = [];
  /** Per call, where its last start not yet joined by an end is in `events`. */
  const openStarts = new Map<string, number>();
  batch.forEach((item, position) => {
    if (item.mode === "start") {
      const event = toStartEvent(item.req.start, username, ids, position);
      openStarts.set(callKey(event), events.length);
      events.push(event);
      res.push({ id: event.id, trace_id: event.trace_id });
      return;
    }
    const end = toEndEvent(item.req.end);
    const key = callKey(end);
    const at = openStarts.get(key);
    if (at === undefined) events.push(end);
    else {
      events[at] = completedCall(events[at] as CallStartEvent, end);
      openStarts.delete(key);
    }
    res.push({});
  });
  return { events, res };
}
