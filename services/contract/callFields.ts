import type { JsonObject, JsonValue } from "../json.js";

/**
 * The fields of a call, each written once: what it holds, whether it may be null, which part
 * of a call brings it, whether clients read it. Derived from this table: the queue's event
 * schema and types (queue/events.ts), the stored row's types, its column list and its
 * reading back (store/calls/callRows.ts, callsWrite.ts), the query fields
 * (store/calls/fields.ts), the JSON view (query/callView.ts) and the CallSchema clients
 * read (contract/calls.ts).
 *
 * Not derived, each for one reason:
 * - the insert bodies (contract/calls.ts) and their hot-path check (callsFastCheck.ts):
 *   each body has its own key order (the SDKs' order, which the fast check must keep to
 *   answer the input itself) and its own bounds per field (`id` optional in a start,
 *   required in an end; `trace_id` unbounded in an end);
 * - the event's hand check (queue/events.ts `isTraceEvent`): a loop over this table costs
 *   ~6× as much per event on the hot path; a test checks it against the derived schema;
 * - ingest's body → event mapping (ingest/callEvents.ts): each field has its own default
 *   (ids made, `wb_user_id` from the key, `summary` {} for a complete);
 * - the worker's merge (worker/callMerge.ts): which part overrides which is per field;
 * - the row writer (store/calls/callsWrite.ts `writeCallRow`): on the RowBinary hot path
 *   each column is one direct call (its column list is derived; the tests that read rows
 *   back check the order);
 * - the `calls` DDL (store/calls/schema.ts): a migration is history, never regenerated.
 */

/** What a field holds: text; an integer; a time (integer µs in events and rows, ISO 8601 for clients); JSON. */
export type CallFieldType = "string" | "int" | "datetime" | "json_object" | "json_value";

export interface CallFieldSpec {
  readonly type: CallFieldType;
  /** May be null in the part that brings it. A field of the end is also NULL in a row until the end comes. */
  readonly nullable: boolean;
  /** Which part brings it: the start or the end (`call_complete` brings both). */
  readonly part: "start" | "end";
  /** In the CallSchema clients read (`otel_dump` is kept, never shown). */
  readonly shown: boolean;
}

const start = <T extends CallFieldType, N extends boolean = false>(type: T, nullable = false as N, shown = true) => ({ type, nullable, part: "start" as const, shown });
const end = <T extends CallFieldType, N extends boolean = false>(type: T, nullable = false as N) => ({ type, nullable, part: "end" as const, shown: true });

/**
 * In the order of the stored row's columns, which is also the order of the queue's event
 * fields: the durable log writes an event as its values in that order (queue/durableLog/
 * recordCodec.ts), so the order of the start's and of the end's fields never changes.
 */
export const CALL_FIELDS = {
  project_id: start("string"),
  id: start("string"),
  trace_id: start("string"),
  parent_id: start("string", true),
  thread_id: start("string", true),
  turn_id: start("string", true),
  op_name: start("string"),
  display_name: start("string", true),
  started_at: start("datetime"),
  ended_at: end("datetime"),
  exception: end("string", true),
  attributes: start("json_object"),
  inputs: start("json_object"),
  // Any JSON, null included: an end without output holds null.
  output: end("json_value"),
  summary: end("json_object"),
  otel_dump: start("json_object", true, false),
  wb_user_id: start("string", true),
  wb_run_id: start("string", true),
  wb_run_step: start("int", true),
  wb_run_step_end: end("int", true),
} as const satisfies Record<string, CallFieldSpec>;

export type CallFieldName = keyof typeof CALL_FIELDS;
type Spec<K extends CallFieldName> = (typeof CALL_FIELDS)[K];

/** The table's entries, in its order, for the derivations (made once). */
export const CALL_FIELD_ENTRIES = Object.entries(CALL_FIELDS) as readonly (readonly [CallFieldName, CallFieldSpec])[];

/** The shown fields in the order of Weave's CallSchema, which the JSON view and its schema keep (`summary` comes last in the view: it is computed). */
export const SHOWN_ORDER = [
  "id", "project_id", "op_name", "display_name", "trace_id", "parent_id", "thread_id", "turn_id", "started_at", "ended_at",
  "exception", "attributes", "inputs", "output", "summary", "wb_user_id", "wb_run_id", "wb_run_step", "wb_run_step_end",
] as const satisfies readonly CallFieldName[];

/** Whether a stored row may hold NULL: a nullable field, or any field of the end. */
export const nullableInRow = (spec: CallFieldSpec): boolean => spec.nullable || spec.part === "end";

/** Whether a field may be NULL in a stored row, at the type level (see nullableInRow). */
export type NullableInRow<S extends CallFieldSpec> = S["nullable"] extends true ? true : S["part"] extends "end" ? true : false;

type Base<T extends CallFieldType> = T extends "string" ? string : T extends "int" | "datetime" ? number : T extends "json_object" ? JsonObject : JsonValue;
type OrNull<S extends CallFieldSpec, V> = S["nullable"] extends true ? V | null : V;

/** The fields a part brings, as events and the worker hold them (times in µs, JSON parsed). */
export type CallPartFields<P extends "start" | "end"> = {
  readonly [K in CallFieldName as Spec<K>["part"] extends P ? K : never]: OrNull<Spec<K>, Base<Spec<K>["type"]>>;
};

/** A whole call as the worker assembles it: every field, a field of the end null until the end comes. */
export type CallFieldValues = {
  [K in CallFieldName]: Spec<K>["part"] extends "end" ? Base<Spec<K>["type"]> | null : OrNull<Spec<K>, Base<Spec<K>["type"]>>;
};
