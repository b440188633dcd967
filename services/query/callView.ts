import { CALL_FIELDS, nullableInRow, SHOWN_ORDER, type CallFieldSpec } from "../contract/callFields.js";
import type { CallSchema } from "../contract/calls.js";
import { type CallRow } from "../store/calls/callRows.js";
import { shownComputedValues } from "../store/calls/computedFields.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";
import { microsToIso } from "../times.js";

export interface CallViewOptions {
  readonly columns?: readonly string[] | null;
  readonly includeStorageSize?: boolean;
  readonly includeUsernames?: boolean;
  readonly traceStorageSize?: number;
}

const ALWAYS = ["id", "project_id", "trace_id", "op_name", "started_at", "storage_size_bytes", "total_storage_size_bytes", "wb_username"];

function parse<T extends JsonValue>(text: string | null | undefined, fallback: T): T {
  if (text === null || text === undefined || text === "") return fallback;
  return JSON.parse(text) as T;
}

const num = (v: string | number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

type Shown = (value: string | number | null | undefined) => unknown;

/** A column's value as clients read it, by the field's type (contract/callFields.ts). */
function shownOf(spec: CallFieldSpec): Shown {
  switch (spec.type) {
    case "string":
      return nullableInRow(spec) ? (v) => v ?? null : (v) => v;
    case "int":
      return num;
    case "datetime":
      return (v) => {
        const micros = num(v);
        return micros === null ? null : microsToIso(micros);
      };
    case "json_object":
      return (v) => parse<JsonObject>(v as string | null | undefined, {});
    case "json_value":
      return (v) => parse<JsonValue>(v as string | null | undefined, null);
  }
}

/** The shown columns in CallSchema's order, made once; `summary` is added after them, with its computed values. */
const SHOWN_COLUMNS = SHOWN_ORDER.filter((name) => name !== "summary").map((name) => [name, shownOf(CALL_FIELDS[name])] as const);

/**
 * A stored row → the CallSchema clients read, with `summary.weave` computed now: the shown
 * values of computedFields.ts (status, trace name, latency), defined there with their SQL.
 */
export function toCallSchema(row: Partial<CallRow> & CallRow, options: CallViewOptions = {}): Partial<CallSchema> {
  const startedAt = Number(row.started_at);
  const endedAt = num(row.ended_at);
  const stored = row.summary === undefined ? undefined : parse<JsonObject | null>(row.summary, null);
  const call: Record<string, unknown> = {};
  for (const [name, show] of SHOWN_COLUMNS) call[name] = show(row[name]);
  call.deleted_at = null;
  if (stored !== undefined) {
    const summary: JsonObject = { ...(stored ?? {}) };
    const computed = shownComputedValues({
      op_name: row.op_name,
      display_name: row.display_name ?? null,
      started_at: startedAt,
      ended_at: endedAt,
      exception: row.exception ?? null,
      summary: stored,
    });
    summary.weave = { ...(isJsonObject(summary.weave) ? summary.weave : {}), ...computed };
    call.summary = summary;
  }
  if (options.includeStorageSize) call.storage_size_bytes = num(row.storage_size_bytes);
  if (options.traceStorageSize !== undefined) call.total_storage_size_bytes = options.traceStorageSize;
  if (options.includeUsernames && row.wb_user_id) call.wb_username = row.wb_user_id;
  if (options.columns && options.columns.length > 0) {
    const keep = new Set([...ALWAYS, ...options.columns.map((c) => c.split(".")[0] ?? c)]);
    for (const key of Object.keys(call)) if (!keep.has(key)) delete call[key];
  }
  return call as Partial<CallSchema>;
}
