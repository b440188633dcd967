/**
 * The OTLP protobuf decoding as it was before the hand-written reader (protobufjs's generated
 * `decode`, then a conversion to the normalized batch), kept as the reference that
 * decodeReference.test.ts compares the service's decoder with.
 */
import { ExportTraceServiceRequest } from "../../services/otlp/protobuf.js";
import { doubleValue, int64Value, type OtlpAttributes, type OtlpEvent, type OtlpLink, type OtlpResourceGroup, type OtlpScopeGroup, type OtlpSpan, type OtlpSpanBatch } from "../../services/otlp/batch.js";
import { OtlpDecodeError } from "../../services/otlp/decodeError.js";
import { setOwn } from "../../services/otlp/nest.js";
import type { JsonObject, JsonValue } from "../../services/json.js";

/*
 * What protobufjs decodes, per the schema above (snake_case kept). Unset scalars read as
 * their defaults, unset messages as null; 64-bit integers are `Long`s.
 */
interface PbLong {
  readonly low: number;
  readonly high: number;
}
type PbInt64 = PbLong | number | string;
/** Decoded bytes are a Buffer; an unset bytes field reads as an empty array. */
type PbBytes = Uint8Array | readonly number[];

interface PbAnyValue {
  /** The name of the member of the `value` oneof that is set. */
  readonly value?: string;
  readonly string_value: string;
  readonly bool_value: boolean;
  readonly int_value: PbInt64;
  readonly double_value: number;
  readonly array_value: { readonly values: readonly PbAnyValue[] } | null;
  readonly kvlist_value: { readonly values: readonly PbKeyValue[] } | null;
  readonly bytes_value: PbBytes;
}
interface PbKeyValue {
  readonly key: string;
  readonly value: PbAnyValue | null;
}
interface PbEvent {
  readonly time_unix_nano: PbInt64;
  readonly name: string;
  readonly attributes: readonly PbKeyValue[];
  readonly dropped_attributes_count: number;
}
interface PbLink {
  readonly trace_id: PbBytes;
  readonly span_id: PbBytes;
  readonly trace_state: string;
  readonly attributes: readonly PbKeyValue[];
  readonly dropped_attributes_count: number;
  readonly flags: number;
}
interface PbSpan {
  readonly trace_id: PbBytes;
  readonly span_id: PbBytes;
  readonly trace_state: string;
  readonly parent_span_id: PbBytes;
  readonly flags: number;
  readonly name: string;
  readonly kind: number;
  readonly start_time_unix_nano: PbInt64;
  readonly end_time_unix_nano: PbInt64;
  readonly attributes: readonly PbKeyValue[];
  readonly dropped_attributes_count: number;
  readonly events: readonly PbEvent[];
  readonly dropped_events_count: number;
  readonly links: readonly PbLink[];
  readonly dropped_links_count: number;
  readonly status: { readonly code: number; readonly message: string } | null;
}
interface PbScopeSpans {
  readonly scope: {
    readonly name: string;
    readonly version: string;
    readonly attributes: readonly PbKeyValue[];
    readonly dropped_attributes_count: number;
  } | null;
  readonly spans: readonly PbSpan[];
  readonly schema_url: string;
}
interface PbResourceSpans {
  readonly resource: { readonly attributes: readonly PbKeyValue[]; readonly dropped_attributes_count: number } | null;
  readonly scope_spans: readonly PbScopeSpans[];
  readonly schema_url: string;
}
interface PbExportRequest {
  readonly resource_spans: readonly PbResourceSpans[];
}

/** Decodes a binary `ExportTraceServiceRequest`. */
export function referenceBatchFromProtobuf(body: Uint8Array): OtlpSpanBatch {
  let request: PbExportRequest;
  try {
    // The decoded message has exactly the shape the schema declares.
    request = ExportTraceServiceRequest.decode(body) as unknown as PbExportRequest;
  } catch (error) {
    throw new OtlpDecodeError(`invalid protobuf ExportTraceServiceRequest: ${(error as Error).message}`);
  }
  return { resources: request.resource_spans.map(resourceGroup) };
}

function resourceGroup(rs: PbResourceSpans): OtlpResourceGroup {
  return {
    attributes: attributes(rs.resource?.attributes ?? []),
    droppedAttributesCount: rs.resource?.dropped_attributes_count ?? 0,
    schemaUrl: rs.schema_url,
    scopes: rs.scope_spans.map(scopeGroup),
  };
}

function scopeGroup(ss: PbScopeSpans): OtlpScopeGroup {
  return {
    scope: {
      name: ss.scope?.name ?? "",
      version: ss.scope?.version ?? "",
      attributes: attributes(ss.scope?.attributes ?? []),
      droppedAttributesCount: ss.scope?.dropped_attributes_count ?? 0,
    },
    schemaUrl: ss.schema_url,
    spans: ss.spans.map(span),
  };
}

function span(s: PbSpan): OtlpSpan {
  return {
    traceId: hex(s.trace_id),
    spanId: hex(s.span_id),
    traceState: s.trace_state,
    parentSpanId: hex(s.parent_span_id),
    flags: s.flags,
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: uint64(s.start_time_unix_nano),
    endTimeUnixNano: uint64(s.end_time_unix_nano),
    attributes: attributes(s.attributes),
    droppedAttributesCount: s.dropped_attributes_count,
    events: s.events.map(event),
    droppedEventsCount: s.dropped_events_count,
    links: s.links.map(link),
    droppedLinksCount: s.dropped_links_count,
    status: { code: s.status?.code ?? 0, message: s.status?.message ?? "" },
  };
}

function event(e: PbEvent): OtlpEvent {
  return {
    timeUnixNano: uint64(e.time_unix_nano),
    name: e.name,
    attributes: attributes(e.attributes),
    droppedAttributesCount: e.dropped_attributes_count,
  };
}

function link(l: PbLink): OtlpLink {
  return {
    traceId: hex(l.trace_id),
    spanId: hex(l.span_id),
    traceState: l.trace_state,
    attributes: attributes(l.attributes),
    droppedAttributesCount: l.dropped_attributes_count,
    flags: l.flags,
  };
}

function attributes(list: readonly PbKeyValue[]): OtlpAttributes {
  const out: JsonObject = {};
  for (const kv of list) setOwn(out, kv.key, anyValue(kv.value));
  return out;
}

function anyValue(v: PbAnyValue | null): JsonValue {
  switch (v?.value) {
    case "string_value": return v.string_value;
    case "bool_value": return v.bool_value;
    case "int_value": return int64Value(int64(v.int_value, true));
    case "double_value": return doubleValue(v.double_value);
    case "array_value": return (v.array_value?.values ?? []).map(anyValue);
    case "kvlist_value": return attributes(v.kvlist_value?.values ?? []);
    case "bytes_value": return bytes(v.bytes_value).toString("base64");
    default: return null;
  }
}

function bytes(value: PbBytes): Buffer {
  if (Buffer.isBuffer(value)) return value;
  return value instanceof Uint8Array ? Buffer.from(value.buffer, value.byteOffset, value.byteLength) : Buffer.from(value);
}

function hex(value: PbBytes): string {
  return bytes(value).toString("hex");
}

function uint64(value: PbInt64): bigint {
  return int64(value, false);
}

function int64(value: PbInt64, signed: boolean): bigint {
  if (typeof value === "number") return BigInt(value);
  if (typeof value === "string") return BigInt(value);
  const bits = (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  return signed ? BigInt.asIntN(64, bits) : bits;
}
