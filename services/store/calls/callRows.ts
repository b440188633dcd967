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

/** ISO 8601 (any fraction length, any offset) → microseconds, keeping full precision. */
export function isoToMicros(text: string): number | null {
  return commonIsoToMicros(text) ?? anyIsoToMicros(text);
}

const ZERO = 48;

/** The digits of text[from, from + count) as a number; -1 if any is not a digit. */
function digits(text: string, from: number, count: number): number {
  let n = 0;
  for (let i = from; i < from + count; i++) {
    const d = text.charCodeAt(i) - ZERO;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The form every client sends (`2026-11-21T10:00:00.123456Z`, or with `±hh:mm`), read
 * character by character: ingest reads two of these per call. Null when the text is of
 * another form, or a date that needs the calendar's edge rules (day > 28, hour 24).
 */
function commonIsoToMicros(text: string): number | null {
  if (text.length < 20 || text[4] !== "-" || text[7] !== "-" || text[10] !== "T" || text[13] !== ":" || text[16] !== ":") return null;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (year < 1000 || month < 1 || month > 12 || day < 1 || day > 28 || hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 59) return null;
  let at = 19;
  let fraction = 0;
  if (text[at] === ".") {
    const first = ++at;
    while (at < text.length && text.charCodeAt(at) >= ZERO && text.charCodeAt(at) <= ZERO + 9) at++;
    const count = at - first;
    if (count === 0 || count > 9) return null;
    fraction = digits(text, first, Math.min(count, 6)) * 10 ** (6 - Math.min(count, 6));
  }
  let offsetMinutes = 0;
  if (text[at] === "Z" && at === text.length - 1) {
    offsetMinutes = 0;
  } else if ((text[at] === "+" || text[at] === "-") && at === text.length - 6 && text[at + 3] === ":") {
    const offsetHours = digits(text, at + 1, 2);
    const offsetMins = digits(text, at + 4, 2);
    if (offsetHours < 0 || offsetHours > 23 || offsetMins < 0 || offsetMins > 59) return null;
    offsetMinutes = (text[at] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  } else {
    return null;
  }
  const seconds = daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60;
  return seconds * 1_000_000 + fraction;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
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
