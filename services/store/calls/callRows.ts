import { type CALL_FIELDS, type CallFieldName, type CallFieldSpec, type CallFieldValues, type NullableInRow } from "../../contract/callFields.js";
import type { JsonObject, JsonValue } from "../../json.js";

/**
 * A call as the worker assembles it from its parts: the domain form of one `calls` row, its
 * fields those of contract/callFields.ts. `has_end` is derived from `ended_at`;
 * `start_known` is false for a call known only from an end that named its start time (its
 * start fields are placeholders until the start comes), and is stored in the row's version
 * rank (`rowVersion`).
 */
export interface CallSnapshot extends CallFieldValues {
  start_known: boolean;
}

/**
 * What the worker reads of a call once its rows are written: its ids, times, thread and turn
 * (its `call_index` row, the deletes that cover it, its thread's aggregates, its project).
 */
export type WrittenCall = Pick<CallSnapshot, "project_id" | "id" | "trace_id" | "parent_id" | "thread_id" | "turn_id" | "started_at" | "ended_at">;

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

type RowValue<S extends CallFieldSpec> = S["type"] extends "int" | "datetime" ? string | number : string;
type OrNull<S extends CallFieldSpec, V> = NullableInRow<S> extends true ? V | null : V;

/**
 * The `calls` row as ClickHouse returns it in JSONEachRow: a field of the table per column
 * (Int64 comes back as a string, JSON as its text), and the storage size.
 */
export type CallRow = { [K in CallFieldName]: OrNull<(typeof CALL_FIELDS)[K], RowValue<(typeof CALL_FIELDS)[K]>> } & {
  storage_size_bytes: string | number;
};

/** A call's fields as stored, with its row's version (the worker's lookups). */
export type VersionedCallRow = Omit<CallRow, "storage_size_bytes"> & { version: string | number };

function parseJson<T extends JsonValue>(text: string | null, fallback: T): T {
  if (text === null || text === "") return fallback;
  return JSON.parse(text) as T;
}

function toNumber(value: string | number | null): number | null {
  return value === null ? null : Number(value);
}

/**
 * Written out, not a loop over contract/callFields.ts: an object literal is built in less
 * than half the time (the worker reads a stored call back for each late part); the
 * compiler checks it against CallSnapshot, which is derived from the table.
 */
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
