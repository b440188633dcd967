import type { JsonObject, JsonValue } from "../../json.js";

/**
 * A call as the worker assembles it from its parts: the domain form of one `calls` row.
 * `has_end` is derived from `ended_at`.
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

function parseJson<T extends JsonValue>(text: string | null, fallback: T): T {
  if (text === null || text === "") return fallback;
  return JSON.parse(text) as T;
}

function toNumber(value: string | number | null): number | null {
  return value === null ? null : Number(value);
}

export function rowToSnapshot(row: CallRow): CallSnapshot {
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
  };
}
