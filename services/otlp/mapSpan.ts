/**
 * OTLP spans → call parts: each valid span becomes one `CallCompleteEvent` (a span arrives
 * finished; rules: tracing-api.md, "OpenTelemetry export"; key tables: attributes.ts).
 *
 * Call `attributes` layout:
 *   {
 *     model?, provider?, system?, kind?, operation?, agent?, trace_name?,  // mapped families, text
 *     model_parameters?,                                       // object
 *     tags?, metadata?, cost_details?,                         // JSON families (Langfuse)
 *     otel: {
 *       attributes: <all span attributes, dotted keys nested>,   // see nest.ts
 *       resource: <all resource attributes, dotted keys nested>,
 *       scope: {name, version},
 *     },
 *   }
 * so `attributes.otel.attributes.gen_ai.request.temperature` reaches a raw attribute.
 * The span as received is in `otel_dump`, without the attributes kept above (otelDump.ts).
 * A model call whose attributes hold no input takes the one its parent span in the same
 * export hands down (Mastra: attributes.ts, `inputForChildren`).
 *
 * A span is rejected on its own (counted, with a short reason) when its trace id is not 16
 * bytes or all zeros, its span id not 8 bytes or all zeros, its parent id neither empty,
 * all zeros (= root) nor 8 bytes, it ends before it starts, its end is beyond what
 * microseconds keep exactly, or its size (`spanBytes`: about its protobuf size) exceeds
 * `maxSpanBytes`. The size is counted on the decoded span rather than on the JSON of its
 * events, so that no span is serialized twice (here and by the worker).
 */
import type { CallCompleteEvent } from "../queue/events.js";
import type { OtlpAttributes, OtlpSpan, OtlpSpanBatch } from "./batch.js";
import { STATUS_CODE_ERROR } from "./batch.js";
import { hasKeys, inheritedInputs, inputForChildren, spanFields, type SpanFields } from "./attributes.js";
import { nestDottedKeys } from "./nest.js";
import { otelDump, resourceDump, scopeDump, type GroupDump } from "./otelDump.js";
import type { JsonObject, JsonValue } from "../json.js";

export interface MapSpansContext {
  readonly project_id: string;
  readonly wb_user_id: string;
  /** null: every span is known to be accepted (all of a logged export's spans were), none is checked again. */
  readonly maxSpanBytes: number | null;
}

/** How many spans the batch holds. */
export function spanCount(batch: OtlpSpanBatch): number {
  let count = 0;
  for (const resource of batch.resources) for (const group of resource.scopes) count += group.spans.length;
  return count;
}

/** Every span of the batch, in order (resources, then their scope groups). */
function* spansOf(batch: OtlpSpanBatch): Generator<OtlpSpan> {
  for (const resource of batch.resources) for (const group of resource.scopes) yield* group.spans;
}

/** Spans rejected: how many, with reasons for the first `MAX_REJECTION_REASONS` (bounded; `rejected` counts all). */
export interface SpanRejections {
  readonly rejected: number;
  readonly errors: string[];
}

export interface MappedSpans extends SpanRejections {
  readonly events: CallCompleteEvent[];
}

/** What checking an export's spans found: the rejections, and how many were accepted (the first one's id). */
export interface CheckedSpans extends SpanRejections {
  readonly accepted: number;
  readonly firstAcceptedId: string | null;
}

export const MAX_REJECTION_REASONS = 10;
export const EXCEPTION_WITHOUT_MESSAGE = "error";

export const TRACE_ID_LENGTH = 32;
export const SPAN_ID_LENGTH = 16;
/** The first end time (ns) whose microseconds are beyond what a number keeps exactly. */
export const FIRST_INEXACT_NANOS = (BigInt(Number.MAX_SAFE_INTEGER) + 1n) * 1000n;
const REASON_TEXT_LIMIT = 64;

/**
 * What the calls of a scope group's spans share, made once per group: the same objects in
 * every call of the group (no call's attributes or dump is changed after mapping).
 */
interface GroupParts {
  /** The resource's attributes, dotted keys nested (`attributes.otel.resource`). */
  readonly resource: JsonObject;
  /** `attributes.otel.scope`. */
  readonly scope: JsonObject;
  readonly dump: GroupDump;
}

class Rejections implements SpanRejections {
  rejected = 0;
  readonly errors: string[] = [];

  add(span: OtlpSpan, reason: string): void {
    this.rejected += 1;
    if (this.errors.length < MAX_REJECTION_REASONS) this.errors.push(`span ${spanLabel(span)}: ${reason}`);
  }
}

/**
 * The spans of an export that are kept, without mapping them: what ingest answers and logs
 * (the worker maps the same spans later with `mapSpans`, which applies the same checks).
 */
export function checkSpans(batch: OtlpSpanBatch, maxSpanBytes: number): CheckedSpans {
  const rejections = new Rejections();
  let accepted = 0;
  let firstAcceptedId: string | null = null;
  for (const span of spansOf(batch)) {
    const reason = rejection(span, maxSpanBytes);
    if (reason !== null) rejections.add(span, reason);
    else if (accepted++ === 0) firstAcceptedId = span.spanId;
  }
  return { accepted, firstAcceptedId, rejected: rejections.rejected, errors: rejections.errors };
}

/**
 * `checkSpans` of a protobuf export read by `spansWithoutText` (protobufReader.ts), when every
 * span is valid and its encoded length alone shows it within `maxSpanBytes`; null otherwise,
 * and `checkSpans` of the full read tells. No text is read, and a span accepted here is one
 * `checkSpans` and `mapSpans` accept.
 */
export function checkEncodedSpans(read: { batch: OtlpSpanBatch; encodedLengths: readonly number[] }, maxSpanBytes: number): CheckedSpans | null {
  let accepted = 0;
  let firstAcceptedId: string | null = null;
  for (const span of spansOf(read.batch)) {
    if (mostCountedBytes(read.encodedLengths[accepted]!) > maxSpanBytes || invalidReason(span) !== null) return null;
    if (accepted++ === 0) firstAcceptedId = span.spanId;
  }
  return { accepted, firstAcceptedId, rejected: 0, errors: [] };
}

export function mapSpans(batch: OtlpSpanBatch, ctx: MapSpansContext): MappedSpans {
  const events: CallCompleteEvent[] = [];
  const calls = mappedSpans(batch, ctx);
  for (let next = calls.next(); ; next = calls.next()) {
    if (next.done) return { events, ...next.value };
    events.push(next.value);
  }
}

/**
 * `mapSpans` one call at a time: each is made when it is asked for, so that a caller that is
 * done with a call before asking for the next (the worker writing its row) holds one call's
 * objects at a time. Returns the rejections.
 */
export function* mappedSpans(batch: OtlpSpanBatch, ctx: MapSpansContext): Generator<CallCompleteEvent, SpanRejections> {
  const rejections = new Rejections();
  const handedDown = inputsHandedDown(batch);
  for (const resource of batch.resources) {
    const resourceNested = nestDottedKeys(resource.attributes);
    const resourceInDump = resourceDump(resource);
    for (const group of resource.scopes) {
      const shared: GroupParts = {
        resource: resourceNested,
        scope: { name: group.scope.name, version: group.scope.version },
        dump: { resource: resourceInDump, scope: scopeDump(group) },
      };
      for (const span of group.spans) {
        const reason = ctx.maxSpanBytes === null ? null : rejection(span, ctx.maxSpanBytes);
        if (reason !== null) rejections.add(span, reason);
        else yield completeEvent(shared, span, ctx, handedDown);
      }
    }
  }
  return { rejected: rejections.rejected, errors: rejections.errors };
}

/** Span id → the input it hands down to a model call below it (attributes.ts, `inputForChildren`); null when none does. */
function inputsHandedDown(batch: OtlpSpanBatch): Map<string, JsonValue> | null {
  let found: Map<string, JsonValue> | null = null;
  for (const span of spansOf(batch)) {
    const input = inputForChildren(span.attributes);
    if (input !== undefined) (found ??= new Map()).set(span.spanId, input);
  }
  return found;
}

/** Why the span is not kept, or null. */
function rejection(span: OtlpSpan, maxSpanBytes: number): string | null {
  const invalid = invalidReason(span);
  if (invalid) return invalid;
  const size = spanBytes(span);
  return size > maxSpanBytes ? `${size} bytes, over the limit of ${maxSpanBytes}` : null;
}

/** Bytes counted for a number, boolean or null, and for each id, time and enum of a span. */
const SCALAR_BYTES = 8;
/** What `spanBytes` counts for a span's ids, times and enums. */
const SPAN_SCALARS_BYTES = 12 * SCALAR_BYTES;
/**
 * The most `spanBytes` can count for a span of `encodedLength` protobuf bytes: beyond the
 * scalars every span counts, at most 16 per byte. A string's UTF-8 (invalid bytes replaced)
 * is at most 3 times its encoded bytes, a value counted as SCALAR_BYTES takes 2 encoded bytes
 * or more, and an empty link, 2 bytes, counts 4 × SCALAR_BYTES.
 */
export const mostCountedBytes = (encodedLength: number): number => SPAN_SCALARS_BYTES + 16 * encodedLength;

/**
 * The size of a span's own data, close to its protobuf encoding: UTF-8 bytes of its name,
 * trace state, status message, attribute keys and string values (and of its events' and
 * links'), plus `SCALAR_BYTES` for every other value, id, time and enum. The resource and
 * scope are shared by the request and not counted (the body limit bounds them).
 */
export function spanBytes(span: OtlpSpan): number {
  let size = SPAN_SCALARS_BYTES + utf8(span.name) + utf8(span.traceState) + utf8(span.status.message) + attributesBytes(span.attributes);
  for (const e of span.events) size += 2 * SCALAR_BYTES + utf8(e.name) + attributesBytes(e.attributes);
  for (const l of span.links) size += 4 * SCALAR_BYTES + utf8(l.traceState) + attributesBytes(l.attributes);
  return size;
}

function utf8(text: string): number {
  return text.length === 0 ? 0 : Buffer.byteLength(text, "utf8");
}

function attributesBytes(attributes: OtlpAttributes): number {
  let size = 0;
  for (const key in attributes) size += utf8(key) + valueBytes(attributes[key] ?? null);
  return size;
}

function valueBytes(value: JsonValue): number {
  if (typeof value === "string") return utf8(value);
  if (value === null || typeof value !== "object") return SCALAR_BYTES;
  if (Array.isArray(value)) {
    let size = 0;
    for (const item of value) size += valueBytes(item);
    return size;
  }
  return attributesBytes(value);
}

function invalidReason(span: OtlpSpan): string | null {
  if (idForm(span.traceId, TRACE_ID_LENGTH) !== "id") return "invalid trace id";
  if (idForm(span.spanId, SPAN_ID_LENGTH) !== "id") return "invalid span id";
  if (span.parentSpanId !== "" && idForm(span.parentSpanId, SPAN_ID_LENGTH) === "invalid") return "invalid parent span id";
  if (span.endTimeUnixNano < span.startTimeUnixNano) return "ends before it starts";
  if (span.endTimeUnixNano >= FIRST_INEXACT_NANOS) return "end time out of range";
  return null;
}

function parentId(span: OtlpSpan): string | null {
  return span.parentSpanId === "" || idForm(span.parentSpanId, SPAN_ID_LENGTH) === "zeros" ? null : span.parentSpanId;
}

/** An id's text: `length` lowercase hex digits ("id", or "zeros" when all are 0), else "invalid". */
export function idForm(text: string, length: number): "id" | "zeros" | "invalid" {
  if (text.length !== length) return "invalid";
  let zeros = true;
  for (let i = 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x30) continue;
    if (!((c > 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) return "invalid";
    zeros = false;
  }
  return zeros ? "zeros" : "id";
}

function micros(nanos: bigint): bigint {
  return nanos / 1000n;
}

function completeEvent(shared: GroupParts, span: OtlpSpan, ctx: MapSpansContext, handedDown: Map<string, JsonValue> | null): CallCompleteEvent {
  const nested = nestDottedKeys(span.attributes);
  const fields = spanFields(span.attributes, nested);
  const parent = parentId(span);
  let inputs = fields.inputs;
  if (handedDown !== null && parent !== null && !hasKeys(inputs)) inputs = inheritedInputs(fields.operation, handedDown.get(parent)) ?? inputs;
  const thread = fields.threadId;
  const failed = span.status.code === STATUS_CODE_ERROR;
  return {
    kind: "call_complete",
    project_id: ctx.project_id,
    id: span.spanId,
    trace_id: span.traceId,
    parent_id: parent,
    thread_id: thread,
    turn_id: fields.isTurn || (thread !== null && parent === null) ? span.spanId : null,
    op_name: span.name,
    display_name: fields.displayName,
    started_at: Number(micros(span.startTimeUnixNano)),
    attributes: callAttributes(shared, fields, nested),
    inputs,
    otel_dump: otelDump(shared.dump, span, parent),
    wb_user_id: ctx.wb_user_id,
    wb_run_id: fields.runId,
    wb_run_step: fields.runStep,
    ended_at: Number(micros(span.endTimeUnixNano)),
    exception: failed ? span.status.message || EXCEPTION_WITHOUT_MESSAGE : null,
    output: fields.output,
    summary: fields.usage ? { usage: fields.usage } : {},
    wb_run_step_end: null,
  };
}

/** The mapped families, then `otel` (written into the families' object: no copy). */
function callAttributes(shared: GroupParts, fields: SpanFields, nested: JsonObject): JsonObject {
  const attributes = fields.families;
  attributes["otel"] = { attributes: nested, resource: shared.resource, scope: shared.scope };
  return attributes;
}

function spanLabel(span: OtlpSpan): string {
  const name = JSON.stringify(span.name.slice(0, REASON_TEXT_LIMIT));
  return `${name} (${span.spanId.slice(0, REASON_TEXT_LIMIT) || "no span id"})`;
}
