import type { JsonObject, JsonValue } from "../../queue/events.js";

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

/** Microseconds since the epoch → ISO 8601 with microseconds, as Weave writes them. */
export function microsToIso(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const rest = String(Math.round(micros - millis * 1000)).padStart(3, "0");
  return new Date(millis).toISOString().replace("Z", `${rest}Z`);
}

const ISO_FRACTION = /\.(\d+)(?=Z|[+-]\d\d:?\d\d$)/;
const ISO_COMMON = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:Z|([+-])(\d\d):(\d\d))$/;

/** ISO 8601 (any fraction length, any offset) → microseconds, keeping full precision. */
export function isoToMicros(text: string): number | null {
  return commonIsoToMicros(text) ?? anyIsoToMicros(text);
}

/**
 * The form every client sends (`2026-11-21T10:00:00.123456Z`, or with `±hh:mm`), parsed
 * without Date.parse: ingest reads two of these per call. Null when the text is of
 * another form, or a date that needs the calendar's edge rules (day > 28, hour 24).
 */
function commonIsoToMicros(text: string): number | null {
  const m = ISO_COMMON.exec(text);
  if (!m) return null;
  const [month, day, hour, minute, second] = [Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])];
  if (month < 1 || month > 12 || day < 1 || day > 28 || hour > 23 || minute > 59 || second > 59) return null;
  const fraction = m[7] ? Number(m[7].slice(0, 6).padEnd(6, "0")) : 0;
  const offsetMinutes = m[8] ? (m[8] === "-" ? -1 : 1) * (Number(m[9]) * 60 + Number(m[10])) : 0;
  if (offsetMinutes !== 0 && (Number(m[9]) > 23 || Number(m[10]) > 59)) return null;
  return (Date.UTC(Number(m[1]), month - 1, day, hour, minute, second) - offsetMinutes * 60_000) * 1000 + fraction;
}

function anyIsoToMicros(text: string): number | null {
  const millis = Date.parse(text);
  if (Number.isNaN(millis)) return null;
  const fraction = ISO_FRACTION.exec(text)?.[1] ?? "";
  const extra = fraction.length > 3 ? Number(fraction.slice(3, 6).padEnd(3, "0")) : 0;
  return millis * 1000 + extra;
}

/** Exposed for the test that holds the fast parser to the general one. */
export const isoParsers = { commonIsoToMicros, anyIsoToMicros };
