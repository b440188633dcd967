import { z } from "zod";
import { CALL_FIELD_ENTRIES, type CallFieldType, type CallPartFields } from "../contract/callFields.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";
import { bytesField } from "./bytesFields.js";
import type { Topic } from "./queue.js";

/**
 * The one event form that ingest publishes and the worker consumes. Times are integer
 * microseconds since the epoch; JSON-valued fields hold parsed JSON.
 */

export interface CallStartEvent extends CallPartFields<"start"> {
  readonly kind: "call_start";
}

export interface CallEndEvent extends Pick<CallPartFields<"start">, "project_id" | "id">, CallPartFields<"end"> {
  readonly kind: "call_end";
  /**
   * The call's trace and start time, when the client sent them (newer SDKs do): with
   * `started_at`, an end whose start is unknown still shows a finished call. Absent from
   * events written before they existed.
   */
  readonly trace_id?: string | null;
  readonly started_at?: number | null;
}

/** A finished call in one event: its start's fields and its end's, written as one whole call. */
export interface CallCompleteEvent extends CallPartFields<"start">, CallPartFields<"end"> {
  readonly kind: "call_complete";
}

export interface CallUpdateEvent {
  readonly kind: "call_update";
  readonly project_id: string;
  readonly id: string;
  readonly display_name: string;
  readonly updated_at: number;
}

/** The calls a client named; the worker deletes their descendants with them (worker/callDeletes.ts). */
export interface CallsDeleteEvent {
  readonly kind: "calls_delete";
  readonly project_id: string;
  readonly ids: readonly string[];
  readonly deleted_at: number;
  readonly wb_user_id: string;
}

/**
 * An OTLP export as received (its body with the content encoding undone), its spans checked:
 * the worker decodes it again and maps its spans to call events (services/otlp/), which
 * keeps the ingest's thread and the queue free of the spans' call JSON.
 */
export interface OtlpExportEvent {
  readonly kind: "otlp_export";
  readonly project_id: string;
  /** The first accepted span's id (the partition key, as for that span's call). */
  readonly id: string;
  readonly wb_user_id: string;
  readonly format: "protobuf" | "json";
  /** The body as received, its content encoding undone (base64 in a message's JSON: queue/bytesFields.ts). */
  readonly body: Uint8Array;
  /** The span size limit the export was checked against: the worker keeps the same spans. */
  readonly max_span_bytes: number;
  /** How many of its spans were accepted (become calls). */
  readonly spans: number;
}

/** One OTLP log record of a span, as kept (otlp/logRecords.ts). */
export interface OtlpLogRecord {
  readonly trace_id: string;
  readonly span_id: string;
  /** Microseconds: the record's time, else when it was observed. */
  readonly time: number;
  /** Its place in the export that carried it: orders the records of one time. */
  readonly position: number;
  readonly event_name: string;
  readonly severity_number: number;
  readonly severity_text: string;
  readonly body: JsonValue;
  readonly attributes: JsonObject;
  readonly scope_name: string;
}

/** Log records of spans from one OTLP logs export (or a part of one), kept beside their calls. */
export interface OtlpLogRecordsEvent {
  readonly kind: "otlp_log_records";
  readonly project_id: string;
  /** The first record's span id (the partition key, as for that span's call). */
  readonly id: string;
  readonly records: readonly OtlpLogRecord[];
}

export type CallPartEvent = CallStartEvent | CallCompleteEvent | CallEndEvent | CallUpdateEvent;
/** What the worker writes to the calls tables. */
export type CallEvent = CallPartEvent | CallsDeleteEvent;
export type TraceEvent = CallEvent | OtlpExportEvent | OtlpLogRecordsEvent;

/** An OTLP export, by its kind (isTraceEvent checks the shape of a value read back). */
export const isOtlpExport = (event: TraceEvent): event is OtlpExportEvent => event.kind === "otlp_export";
/** OTLP log records, by their kind. */
export const isOtlpLogRecords = (event: TraceEvent): event is OtlpLogRecordsEvent => event.kind === "otlp_log_records";

/** The calls, spans or log records an event brings (an OTLP export: its accepted spans). */
function eventItems(event: TraceEvent): number {
  if (isOtlpExport(event)) return event.spans;
  if (isOtlpLogRecords(event)) return event.records.length;
  return 1;
}

/** What names one call: its project and its id (a part, a stored row, a deletion). */
export interface CallKey {
  readonly project_id: string;
  readonly id: string;
}

/** A call's key as one string: map keys of the worker's merge, the queue's partition key of a part. */
export const callKey = (k: CallKey): string => `${k.project_id}/${k.id}`;

/** The keys' projects, each once, in the order first met (a batch's calls are most often of one project, in runs). */
export function projectsOf(keys: readonly CallKey[]): string[] {
  const projects = new Set<string>();
  let last: string | null = null;
  for (const { project_id } of keys) if (project_id !== last) projects.add((last = project_id));
  return [...projects];
}

/** The keys' ids by project, each id once, in the order first met. */
export function idsByProject(keys: readonly CallKey[]): Map<string, string[]> {
  const grouped = new Map<string, Set<string>>();
  for (const k of keys) {
    const ids = grouped.get(k.project_id);
    if (ids) ids.add(k.id);
    else grouped.set(k.project_id, new Set([k.id]));
  }
  const out = new Map<string, string[]>();
  for (const [projectId, ids] of grouped) out.set(projectId, [...ids]);
  return out;
}

/** Partition key: all parts of one call stay in order in one partition (a delete: its project's). */
export function eventKey(event: TraceEvent): string {
  return event.kind === "calls_delete" ? event.project_id : callKey(event);
}

const jsonObject = z.custom<JsonObject>((value) => isJsonObject(value));
/** Any value JSON.parse returns is JSON; only a missing field is not. */
const jsonValue = z.custom<JsonValue>((value) => value !== undefined);
const integer = z.number().int();

/** A call field's value in an event, by its type (contract/callFields.ts). */
const ZOD_OF_TYPE: Record<CallFieldType, z.ZodType> = { string: z.string(), int: integer, datetime: integer, json_object: jsonObject, json_value: jsonValue };

/** The zod fields of the call fields a part brings, in the table's order (the log's positional layout). */
function partFields<P extends "start" | "end">(part: P): { [K in keyof CallPartFields<P>]-?: z.ZodType<CallPartFields<P>[K]> } {
  const entries = CALL_FIELD_ENTRIES.filter(([, spec]) => spec.part === part);
  return Object.fromEntries(entries.map(([name, spec]) => [name, spec.nullable ? ZOD_OF_TYPE[spec.type].nullable() : ZOD_OF_TYPE[spec.type]])) as never;
}

const startFields = partFields("start");
const endFields = partFields("end");

/**
 * The shape of a trace event read back from the queue (JSON-valued fields: JSON.parse can
 * yield nothing but JSON, so only their top-level kind is checked); its call fields come from
 * contract/callFields.ts. `isTraceEvent` is the same check written out by hand: the call
 * events topic is the ingest hot path.
 */
export const TraceEventSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("call_start"), ...startFields }),
  z.object({ kind: z.literal("call_complete"), ...startFields, ...endFields }),
  z.object({
    kind: z.literal("call_end"),
    project_id: z.string(),
    id: z.string(),
    ...endFields,
    trace_id: z.string().nullish(),
    started_at: integer.nullish(),
  }),
  z.object({
    kind: z.literal("call_update"),
    project_id: z.string(),
    id: z.string(),
    display_name: z.string(),
    updated_at: integer,
  }),
  z.object({
    kind: z.literal("calls_delete"),
    project_id: z.string(),
    ids: z.array(z.string()),
    deleted_at: integer,
    wb_user_id: z.string(),
  }),
  z.object({
    kind: z.literal("otlp_export"),
    project_id: z.string(),
    id: z.string(),
    wb_user_id: z.string(),
    format: z.enum(["protobuf", "json"]),
    body: bytesField,
    max_span_bytes: integer,
    spans: integer,
  }),
  z.object({
    kind: z.literal("otlp_log_records"),
    project_id: z.string(),
    id: z.string(),
    records: z.array(
      z.object({
        trace_id: z.string(),
        span_id: z.string(),
        time: integer,
        position: integer,
        event_name: z.string(),
        severity_number: integer,
        severity_text: z.string(),
        body: jsonValue,
        attributes: jsonObject,
        scope_name: z.string(),
      }),
    ),
  }),
]) satisfies z.ZodType<TraceEvent>;

type Fields = Record<string, unknown>;
const isString = (v: unknown): v is string => typeof v === "string";
const isNullableString = (v: unknown) => v === null || typeof v === "string";
const isInteger = (v: unknown) => Number.isSafeInteger(v);
const isNullableInteger = (v: unknown) => v === null || Number.isSafeInteger(v);

function isOptional(v: unknown, check: (v: unknown) => boolean): boolean {
  return v === undefined || check(v);
}

// Written out, not derived from contract/callFields.ts: a loop over the table's checks costs
// several times as much per event (keyed reads, calls through closures; docs/benchmarks.md, "Figures that were kept in comments"),
// and this is the hot path.
// test/queue/traceEventSchema.test.ts checks it against the derived schema.
function isCallStart(e: Fields): boolean {
  return (
    isString(e.project_id) && isString(e.id) && isString(e.trace_id) && isNullableString(e.parent_id) && isNullableString(e.thread_id) &&
    isNullableString(e.turn_id) && isString(e.op_name) && isNullableString(e.display_name) && isInteger(e.started_at) &&
    isJsonObject(e.attributes) && isJsonObject(e.inputs) && (e.otel_dump === null || isJsonObject(e.otel_dump)) &&
    isNullableString(e.wb_user_id) && isNullableString(e.wb_run_id) && isNullableInteger(e.wb_run_step)
  );
}

function hasEndFields(e: Fields): boolean {
  return isInteger(e.ended_at) && isNullableString(e.exception) && e.output !== undefined && isJsonObject(e.summary) && isNullableInteger(e.wb_run_step_end);
}

function isCallEnd(e: Fields): boolean {
  return (
    isString(e.project_id) && isString(e.id) && hasEndFields(e) && isOptional(e.trace_id, isNullableString) &&
    isOptional(e.started_at, isNullableInteger)
  );
}

function isCallUpdate(e: Fields): boolean {
  return isString(e.project_id) && isString(e.id) && isString(e.display_name) && isInteger(e.updated_at);
}

function isCallsDelete(e: Fields): boolean {
  return isString(e.project_id) && Array.isArray(e.ids) && e.ids.every(isString) && isInteger(e.deleted_at) && isString(e.wb_user_id);
}

function isOtlpExportShape(e: Fields): boolean {
  return (
    isString(e.project_id) && isString(e.id) && isString(e.wb_user_id) && (e.format === "protobuf" || e.format === "json") &&
    e.body instanceof Uint8Array && isInteger(e.max_span_bytes) && isInteger(e.spans)
  );
}

function isLogRecord(r: unknown): boolean {
  if (!isJsonObject(r)) return false;
  return (
    isString(r.trace_id) && isString(r.span_id) && isInteger(r.time) && isInteger(r.position) && isString(r.event_name) && isInteger(r.severity_number) &&
    isString(r.severity_text) && r.body !== undefined && isJsonObject(r.attributes) && isString(r.scope_name)
  );
}

function isOtlpLogRecordsShape(e: Fields): boolean {
  return isString(e.project_id) && isString(e.id) && Array.isArray(e.records) && e.records.every(isLogRecord);
}

/** Exactly `TraceEventSchema`'s check, without its cost (see test/queue/traceEventSchema.test.ts). */
export function isTraceEvent(value: unknown): value is TraceEvent {
  if (!isJsonObject(value)) return false;
  switch (value.kind) {
    case "call_start":
      return isCallStart(value);
    case "call_complete":
      return isCallStart(value) && hasEndFields(value);
    case "call_end":
      return isCallEnd(value);
    case "call_update":
      return isCallUpdate(value);
    case "calls_delete":
      return isCallsDelete(value);
    case "otlp_export":
      return isOtlpExportShape(value);
    case "otlp_log_records":
      return isOtlpLogRecordsShape(value);
    default:
      return false;
  }
}

/** The call events topic: ingest publishes to it, the worker writes what it reads. */
export function traceEventsTopic(name: string): Topic<TraceEvent> {
  return { name, key: eventKey, schema: TraceEventSchema, accepts: isTraceEvent, readScope: (event) => event.project_id, items: eventItems };
}
