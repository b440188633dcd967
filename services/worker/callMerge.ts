import type { CallEndEvent, CallPartEvent, CallStartEvent, CallUpdateEvent } from "../queue/events.js";
import type { CallSnapshot } from "../store/calls/callRows.js";

export type OrphanPart = CallEndEvent | CallUpdateEvent;

export interface MergeResult {
  /** The call after the parts were applied; null while its start is unknown. */
  readonly snapshot: CallSnapshot | null;
  /** Parts that must wait for the start. */
  readonly orphans: readonly OrphanPart[];
}

export function snapshotFromStart(start: CallStartEvent): CallSnapshot {
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
  };
}

function applyPart(snapshot: CallSnapshot, part: OrphanPart): CallSnapshot {
  if (part.kind === "call_update") return { ...snapshot, display_name: part.display_name };
  return {
    ...snapshot,
    ended_at: part.ended_at,
    exception: part.exception,
    output: part.output,
    summary: part.summary,
    wb_run_step_end: part.wb_run_step_end,
  };
}

/**
 * Folds the parts of one call onto what is stored. A call's start fields are fixed by its
 * first start (a repeated start changes nothing); ends and updates apply in arrival order.
 * Applying the same parts twice gives the same call, which makes redelivery harmless.
 */
export function mergeCallParts(existing: CallSnapshot | null, parts: readonly CallPartEvent[]): MergeResult {
  const start = parts.find((p): p is CallStartEvent => p.kind === "call_start");
  const rest = parts.filter((p): p is OrphanPart => p.kind !== "call_start");
  const base = existing ?? (start ? snapshotFromStart(start) : null);
  if (!base) return { snapshot: null, orphans: rest };
  return { snapshot: rest.reduce(applyPart, base), orphans: [] };
}

const VERSION_EPOCH_MICROS = 1_600_000_000_000_000;
const RANK_STRIDE = 1_000_000_000_000_000;

/**
 * Row version for ReplacingMergeTree: a finished call always outranks an unfinished one,
 * so a late duplicate start can never hide an end; within a rank, later writes win.
 * Stays below 2^53 until about 2050.
 */
export function snapshotVersion(snapshot: CallSnapshot, nowMicros: number): number {
  const rank = snapshot.ended_at === null ? 1 : 2;
  return rank * RANK_STRIDE + (nowMicros - VERSION_EPOCH_MICROS);
}
