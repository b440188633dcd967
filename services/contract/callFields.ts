import type { JsonObject, JsonValue } from "../json.js";

/**
 * The fields of a call, each written once: what it holds, whether it may be null, which part
 * of a call brings it, whether clients read it (CALL_FIELDS); and how clients send them
 * (START_BODY, END_BODY, COMPLETE_BODY: each body lists its fields once, in its own key
 * order, with its own bounds and presence). Derived from these tables:
 * - the insert bodies' zod schemas (contract/calls.ts) and their hot-path check
 *   (contract/callsFastCheck.ts), from the body lists;
 * - the CallSchema clients read (contract/calls.ts);
 * - the queue event's zod schema and types (queue/events.ts);
 * - the stored row's types (CallSnapshot, CallRow: store/calls/callRows.ts), its column
 *   list (callsWrite.ts), the columns a calls query reads (callsQuery.ts) and its column
 *   fields for filters and sorts (store/calls/fields.ts).
 *
 * Written out, each for one reason (the per-call conversions are checked by the compiler
 * against the derived types, so a field added here cannot be forgotten there):
 * - the event's hand check (queue/events.ts `isTraceEvent`): a loop over this table costs
 *   ~6× as much per event on the ingest hot path; a test checks it against the derived schema;
 * - the row writer (store/calls/callsWrite.ts `writeCallRow`): the RowBinary hot path
 *   writes each column by a direct call; the tests that read rows back check the order;
 * - reading a row back (callRows.ts `rowToSnapshot`) and the JSON view
 *   (query/callView.ts): an object literal is built in about half (row) and 80% (view) of
 *   the time of a loop over the table;
 * - ingest's body → event mapping (ingest/callEvents.ts): each field has its own default
 *   (ids made, `wb_user_id` from the key, `summary` {} for a complete);
 * - the worker's merge (worker/callMerge.ts): which part overrides which is per field;
 * - the `calls` DDL (store/calls/schema.ts): a migration is history, never regenerated
 *   (test/calls/callFields.test.ts checks it against CALL_FIELDS).
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
 * fields: the durable log writes an event as its values in that order (queue/durableLog/storage/
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

// ---- the insert bodies -----------------------------------------------------------------

/**
 * How a body's field is checked: the zod contract (contract/calls.ts) and the hot-path
 * check (callsFastCheck.ts) each map every one of these to their form, and build each body
 * from the lists below, so the two cannot disagree on which fields a body has, their order
 * or their presence.
 */
export type BodyValue =
  /** `<entity>/<project>` */
  | "project_id"
  /** 1 to 512 characters */
  | "id"
  /** 1 to 2048 characters */
  | "op_name"
  /** at most 2048 characters */
  | "display_name"
  /** any text */
  | "text"
  /** any text, ignored: the server fills the user from the key */
  | "user"
  /** ISO 8601 */
  | "datetime"
  | "int"
  | "json_object"
  /** any JSON */
  | "json"
  /** a call summary (usage, status counts, anything else) */
  | "summary"
  | "bool";

/** required; nullish: may be absent or null; optional: may be absent. */
export type BodyPresence = "required" | "nullish" | "optional";

export type BodyField = readonly [name: CallFieldName | "is_eval", value: BodyValue, presence: BodyPresence];

/**
 * Each body in its own key order: the order Weave's clients send, in which the fast check
 * answers the input itself instead of a copy.
 */
export const START_BODY = [
  ["project_id", "project_id", "required"],
  ["id", "id", "nullish"],
  ["op_name", "op_name", "required"],
  ["display_name", "display_name", "nullish"],
  ["trace_id", "id", "nullish"],
  ["parent_id", "id", "nullish"],
  ["thread_id", "id", "nullish"],
  ["turn_id", "id", "nullish"],
  ["started_at", "datetime", "required"],
  ["attributes", "json_object", "required"],
  ["inputs", "json_object", "required"],
  ["otel_dump", "json_object", "nullish"],
  ["wb_user_id", "user", "nullish"],
  ["wb_run_id", "text", "nullish"],
  ["wb_run_step", "int", "nullish"],
] as const satisfies readonly BodyField[];

export const END_BODY = [
  ["project_id", "project_id", "required"],
  ["id", "id", "required"],
  ["ended_at", "datetime", "required"],
  ["exception", "text", "nullish"],
  ["output", "json", "optional"],
  ["summary", "summary", "required"],
  ["wb_run_step_end", "int", "nullish"],
  // Sent by newer SDKs on every end. `trace_id` and `started_at` let a call whose start has
  // not (yet) arrived be shown finished (worker/callMerge.ts); `is_eval` is accepted and not kept.
  ["trace_id", "text", "nullish"],
  ["started_at", "datetime", "nullish"],
  ["is_eval", "bool", "nullish"],
] as const satisfies readonly BodyField[];

/** A finished call in one record (the Python SDK's calls_complete mode); zod only, it is not on the fast check. */
export const COMPLETE_BODY = [
  ["project_id", "project_id", "required"],
  ["id", "id", "required"],
  ["trace_id", "id", "required"],
  ["op_name", "op_name", "required"],
  ["started_at", "datetime", "required"],
  ["ended_at", "datetime", "required"],
  ["attributes", "json_object", "required"],
  ["inputs", "json_object", "required"],
  ["display_name", "display_name", "nullish"],
  ["parent_id", "id", "nullish"],
  ["thread_id", "id", "nullish"],
  ["turn_id", "id", "nullish"],
  ["otel_dump", "json_object", "nullish"],
  ["exception", "text", "nullish"],
  ["output", "json", "optional"],
  // Required upstream; a client model types it optional, so null is taken as {}.
  ["summary", "summary", "nullish"],
  ["wb_user_id", "user", "nullish"],
  ["wb_run_id", "text", "nullish"],
  ["wb_run_step", "int", "nullish"],
  ["wb_run_step_end", "int", "nullish"],
] as const satisfies readonly BodyField[];
