import type { SHOWN_ORDER } from "../contract/callFields.js";
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

/** The shown call fields (contract/callFields.ts) but `summary`, which is added after them with its computed values. */
type ShownColumns = { [K in Exclude<(typeof SHOWN_ORDER)[number], "summary">]: unknown };

/**
 * A stored row → the CallSchema clients read, with `summary.weave` computed now: the shown
 * values of computedFields.ts (status, trace name, latency), defined there with their SQL.
 */
export function toCallSchema(row: Partial<CallRow> & CallRow, options: CallViewOptions = {}): Partial<CallSchema> {
  const startedAt = Number(row.started_at);
  const endedAt = num(row.ended_at);
  const stored = row.summary === undefined ? undefined : parse<JsonObject | null>(row.summary, null);
  // Written out, not a loop over the table: a literal is built quicker (docs/benchmarks.md, "Figures that were kept in comments"),
  // and the type makes the compiler check it holds every shown field of contract/callFields.ts.
  const columns: ShownColumns & { deleted_at: null } = {
    id: row.id,
    project_id: row.project_id,
    op_name: row.op_name,
    display_name: row.display_name ?? null,
    trace_id: row.trace_id,
    parent_id: row.parent_id ?? null,
    thread_id: row.thread_id ?? null,
    turn_id: row.turn_id ?? null,
    started_at: microsToIso(startedAt),
    ended_at: endedAt === null ? null : microsToIso(endedAt),
    exception: row.exception ?? null,
    attributes: parse<JsonObject>(row.attributes, {}),
    inputs: parse<JsonObject>(row.inputs, {}),
    output: parse<JsonValue>(row.output, null),
    wb_user_id: row.wb_user_id ?? null,
    wb_run_id: row.wb_run_id ?? null,
    wb_run_step: num(row.wb_run_step),
    wb_run_step_end: num(row.wb_run_step_end),
    deleted_at: null,
  };
  const call: Record<string, unknown> = columns;
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
