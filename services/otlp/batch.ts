import type { JsonValue } from "../json.js";
/**
 * The one normalized form of an OTLP `ExportTraceServiceRequest`, whatever its encoding.
 * Both decoders (protobuf and JSON) produce it; the span mapping consumes it.
 *
 * - Ids are lowercase hex of the id bytes ("" when absent). A JSON id that is not hex is
 *   kept as sent, so that the mapping rejects that one span rather than the whole request.
 * - Times are nanoseconds since the Unix epoch as bigint (fixed64 does not fit a number).
 * - Enums are integers, as on the wire (unknown values are kept).
 * - Attribute values are plain JSON: string, boolean, number (an int64 outside the safe
 *   range becomes its decimal string, a non-finite double its name "NaN"/"Infinity"/
 *   "-Infinity"), arrays, objects (kvlist), base64 strings (bytes), null (empty value).
 *   Later duplicates of a key win.
 */

export type OtlpAttributes = Readonly<Record<string, JsonValue>>;

export interface OtlpSpanBatch {
  readonly resources: readonly OtlpResourceGroup[];
}

export interface OtlpResourceGroup {
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
  readonly schemaUrl: string;
  readonly scopes: readonly OtlpScopeGroup[];
}

export interface OtlpScopeGroup {
  readonly scope: OtlpScope;
  readonly schemaUrl: string;
  readonly spans: readonly OtlpSpan[];
}

export interface OtlpScope {
  readonly name: string;
  readonly version: string;
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
}

export interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceState: string;
  /** "" for a root span. */
  readonly parentSpanId: string;
  readonly flags: number;
  readonly name: string;
  /** `SpanKind`: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly startTimeUnixNano: bigint;
  readonly endTimeUnixNano: bigint;
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
  readonly events: readonly OtlpEvent[];
  readonly droppedEventsCount: number;
  readonly links: readonly OtlpLink[];
  readonly droppedLinksCount: number;
  readonly status: OtlpStatus;
}

export interface OtlpEvent {
  readonly timeUnixNano: bigint;
  readonly name: string;
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
}

export interface OtlpLink {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceState: string;
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
  readonly flags: number;
}

export interface OtlpStatus {
  /** `StatusCode`: 0 unset, 1 ok, 2 error. */
  readonly code: number;
  readonly message: string;
}

export const SPAN_KIND_NAMES: readonly string[] = [
  "SPAN_KIND_UNSPECIFIED",
  "SPAN_KIND_INTERNAL",
  "SPAN_KIND_SERVER",
  "SPAN_KIND_CLIENT",
  "SPAN_KIND_PRODUCER",
  "SPAN_KIND_CONSUMER",
];

export const STATUS_CODE_NAMES: readonly string[] = ["STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"];

export const STATUS_CODE_ERROR = 2;

/** An int64 attribute value: a number when it is exactly representable, else its decimal text. */
export function int64Value(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value.toString();
}

/** A double attribute value: non-finite values become their proto3 JSON names. */
export function doubleValue(value: number): number | string {
  if (Number.isFinite(value)) return value;
  if (Number.isNaN(value)) return "NaN";
  return value > 0 ? "Infinity" : "-Infinity";
}
