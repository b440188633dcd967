import type { JsonObject, JsonValue } from "../../json.js";

/**
 * A call as the worker assembles it from its parts: the domain form of one `calls` row.
 * `has_end` is derived from `ended_at`; `start_known` is false for a call known only from an
 * end that named its start time (its start fields are placeholders until the start comes),
 * and is stored in the row's version rank (`rowVersion`).
 */
export interface CallSnapshot {
  project_id: string;
  id: string;
  trace_id: string;
  parent_id: string | null;
  thread_id: string | null;
  turn_id: string | null;
  op_name: string;
  display_name: string | null;
  started_at: number;
  ended_at: number | null;
  exception: string | null;
  attributes: JsonObject;
  inputs: JsonObject;
  output: JsonValue;
  summary: JsonObject | null;
  otel_dump: JsonObject | null;
  wb_user_id: string | null;
  wb_run_id: string | null;
  wb_run_step: number | null;
  wb_run_step_end: number | null;
  start_known: boolean;
}

const VERSION_EPOCH_MICROS = 1_600_000_000_000_000;
const RANK_STRIDE = 1_000_000_000_000_000;

/**
 * Row version for ReplacingMergeTree: rank × RANK_STRIDE + time written. Ranks: 0 a call
 * known only from its end, 1 started, 2 started and finished. So a finished call always
 * outranks an unfinished one (a late duplicate start never hides an end), a known start
 * outranks a placeholder (reads by id see the start's fields as soon as they are stored, which
 * the worker's write-then-look protocol relies on), and within a rank later writes win.
 * Rows written before rank 0 existed keep their meaning. Stays below 2^53 until about 2050.
 */
export function rowVersion(snapshot: CallSnapshot, nowMicros: number): number {
  const rank = !snapshot.start_known ? 0 : snapshot.ended_at === null ? 1 : 2;
  return rank * RANK_STRIDE + (nowMicros - VERSION_EPOCH_MICROS);
}

function startKnownOf(version: string | number): boolean {
  return Number(version) >= RANK_STRIDE;
}

/** The `calls` row as ClickHouse returns it in JSONEachRow (Int64 comes back as a string). */
export interface CallRow {
  project_id: string;
  id: string;
  trace_id: string;
  parent_id: string | null;
  thread_id: string | null;
  turn_id: string | null;
  op_name: string;
  display_name: string | null;
  started_at: string | number;
  ended_at: string | number | null;
  exception: string | null;
  attributes: string;
  inputs: string;
  output: string | null;
  summary: string | null;
  otel_dump: string | null;
  wb_user_id: string | null;
  wb_run_id: string | null;
  wb_run_step: string | number | null;
  wb_run_step_end: string | number | null;
  storage_size_bytes: string | number;
}

/** A `calls` row read whole, with its version (the worker's lookups). */
export type VersionedCallRow = CallRow & { version: string | number };

function parseJson<T extends JsonValue>(text: string | null, fallback: T): T {
  if (text === null || text === "") return fallback;
  return JSON.parse(text) as T;
}

function toNumber(value: string | number | null): number | null {
  return value === null ? null : Number(value);
}

export function rowToSnapshot(row: VersionedCallRow): CallSnapshot {
  return {
    project_id: row.project_id,
    id: row.id,
    trace_id: row.trace_id,
    parent_id: row.parent_id,
    thread_id: row.thread_id,
    turn_id: row.turn_id,
    op_name: row.op_name,
    display_name: row.display_name,
    started_at: Number(row.started_at),
    ended_at: toNumber(row.ended_at),
    exception: row.exception,
    attributes: parseJson<JsonObject>(row.attributes, {}),
    inputs: parseJson<JsonObject>(row.inputs, {}),
    output: row.output === null ? null : parseJson<JsonValue>(row.output, null),
    summary: row.summary === null ? null : parseJson<JsonObject>(row.summary, {}),
    otel_dump: row.otel_dump === null ? null : parseJson<JsonObject>(row.otel_dump, {}),
    wb_user_id: row.wb_user_id,
    wb_run_id: row.wb_run_id,
    wb_run_step: toNumber(row.wb_run_step),
    wb_run_step_end: toNumber(row.wb_run_step_end),
    start_known: startKnownOf(row.version),
  };
}
