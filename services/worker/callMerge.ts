import type { CallCompleteEvent, CallEndEvent, CallPartEvent, CallStartEvent, CallUpdateEvent } from "../queue/events.js";
import { rowVersion, type CallSnapshot } from "../store/calls/callRows.js";

export type OrphanPart = CallEndEvent | CallUpdateEvent;
type StartPart = CallStartEvent | CallCompleteEvent;

export interface MergeResult {
  /**
   * The call after the parts were applied: null while nothing is known of its start; a
   * placeholder (`start_known` false) while only an end naming its start time is.
   */
  readonly snapshot: CallSnapshot | null;
  /** Parts that must wait for the start (they are also in a placeholder snapshot). */
  readonly orphans: readonly OrphanPart[];
}

/**
 * What a call known only from its end shows until its start comes (a v2 `/call/end` of a call
 * whose start was lost or is late, a call still running when an SDK shut down): the end's
 * fields, its `started_at` and `trace_id` (its own id when the end names no trace), this op
 * name, empty inputs and attributes, no parent, thread, turn or user. The start, when it
 * comes, fills in every start field except `started_at` (a call's row is placed by it).
 */
export const UNKNOWN_START_OP_NAME = "unknown";

export const isStartPart = (p: CallPartEvent): p is StartPart => p.kind === "call_start" || p.kind === "call_complete";

export function snapshotFromStart(start: StartPart): CallSnapshot {
  return {
    project_id: start.project_id,
    id: start.id,
    trace_id: start.trace_id,
    parent_id: start.parent_id,
    thread_id: start.thread_id,
    turn_id: start.turn_id,
    op_name: start.op_name,
    display_name: start.display_name,
    started_at: start.started_at,
    ended_at: null,
    exception: null,
    attributes: start.attributes,
    inputs: start.inputs,
    output: null,
    summary: null,
    otel_dump: start.otel_dump,
    wb_user_id: start.wb_user_id,
    wb_run_id: start.wb_run_id,
    wb_run_step: start.wb_run_step,
    wb_run_step_end: null,
    start_known: true,
  };
}

function placeholderFromEnd(end: CallEndEvent & { started_at: number }): CallSnapshot {
  return {
    project_id: end.project_id,
    id: end.id,
    trace_id: end.trace_id || end.id,
    parent_id: null,
    thread_id: null,
    turn_id: null,
    op_name: UNKNOWN_START_OP_NAME,
    display_name: null,
    started_at: end.started_at,
    ended_at: null,
    exception: null,
    attributes: {},
    inputs: {},
    output: null,
    summary: null,
    otel_dump: null,
    wb_user_id: null,
    wb_run_id: null,
    wb_run_step: null,
    wb_run_step_end: null,
    start_known: false,
  };
}

const namesItsStart = (p: OrphanPart): p is CallEndEvent & { started_at: number } =>
  p.kind === "call_end" && typeof p.started_at === "number";

/** What an end (or a complete call's end half) sets on a call. */
type EndFields = Pick<CallEndEvent, "ended_at" | "exception" | "output" | "summary" | "wb_run_step_end">;

/** Applies a part that follows the start onto a call of this merge's own (never a stored one). */
function applyInPlace(call: CallSnapshot, part: CallPartEvent): void {
  if (part.kind === "call_update") call.display_name = part.display_name;
  else if (part.kind === "call_end" || part.kind === "call_complete") setEnd(call, part);
}

function setEnd(call: CallSnapshot, end: EndFields): void {
  call.ended_at = end.ended_at;
  call.exception = end.exception;
  call.output = end.output;
  call.summary = end.summary;
  call.wb_run_step_end = end.wb_run_step_end;
}

/** `call` (this merge's own object, never a stored one) with `parked` then `parts` applied. */
function applied(call: CallSnapshot, parked: readonly OrphanPart[], parts: readonly CallPartEvent[]): CallSnapshot {
  for (const part of parked) applyInPlace(call, part);
  for (const part of parts) applyInPlace(call, part);
  return call;
}

const isOrphanPart = (p: CallPartEvent): p is OrphanPart => !isStartPart(p);

/**
 * Folds the parts of one call onto what is stored. The start fields come from the first start
 * (or complete call) of `parts`, else from the stored call; then `parked` parts (kept in
 * `call_orphan_parts` until the start came) and `parts`' ends and updates apply in arrival order
 * (a repeated start adds nothing, a complete call its end).
 * While no start is known, the parts are returned as orphans, and an end that names its
 * start time (or a stored placeholder) also gives a placeholder snapshot to show meanwhile.
 * Applying the same parts twice gives the same call, which makes redelivery harmless.
 */
export function mergeCallParts(existing: CallSnapshot | null, parts: readonly CallPartEvent[], parked: readonly OrphanPart[] = []): MergeResult {
  const start = parts.find(isStartPart);
  if (start) return { snapshot: applied(snapshotFromStart(start), parked, parts), orphans: [] };
  if (existing?.start_known) return { snapshot: applied({ ...existing }, parked, parts), orphans: [] };
  const rest = [...parked, ...parts.filter(isOrphanPart)];
  const namedStart = rest.find(namesItsStart);
  const placeholder = existing ? { ...existing } : namedStart ? placeholderFromEnd(namedStart) : null;
  return { snapshot: placeholder ? applied(placeholder, rest, []) : null, orphans: rest };
}

/** Row version of a merged call (store/calls/callRows.ts: ranks). */
export function snapshotVersion(snapshot: CallSnapshot, nowMicros: number): number {
  return rowVersion(snapshot, nowMicros);
}
