/**
 * A normalized batch (batch.ts) written as a binary `ExportTraceServiceRequest` that
 * protobufReader.ts reads back to the same batch. Ingest logs an OTLP/JSON export so
 * (services/otlp/exportEvent.ts): the worker then reads the protobuf, several times cheaper than
 * parsing the JSON again, and the log holds about half the bytes (docs/benchmarks.md,
 * "OTLP/JSON exports logged as protobuf").
 *
 * The normalized form has lost some of what was sent (an int64 and a double of the same value
 * are one number, bytes are their base64 text), so the protobuf written is not the one a
 * client would have sent; what matters is that it reads back to the same batch. A batch that
 * protobuf cannot carry so is not written (null): an id kept as sent because it is not hex,
 * or attribute values nested deeper than the reader's recursion limit allows.
 */
import type { OtlpAttributes, OtlpEvent, OtlpLink, OtlpResourceGroup, OtlpScopeGroup, OtlpSpan, OtlpSpanBatch } from "./batch.js";
import { RECURSION_LIMIT } from "./protobufReader.js";
import type { JsonValue } from "../json.js";

/** Wire types of a field's tag. */
const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;

/**
 * The deepest attribute value protobufReader.ts reads back, 1 being an attribute's own value.
 * Above an event's attributes are 5 levels of messages (resource spans, scope spans, span,
 * event, key-value), each level of value is 3 (`AnyValue`, key-value list, key-value), and a
 * value's own list and entries are 2 below it: 3L + 5 must not pass the reader's limit.
 */
const MAX_VALUE_LEVELS = Math.floor((RECURSION_LIMIT - 5) / 3);

/** Lowercase hex of whole bytes: what both decoders make of an id (a JSON id that is not hex is kept as sent). */
const HEX_BYTES = /^(?:[0-9a-f]{2})*$/;

/** Thrown inside `encodeSpanBatch` for what protobuf cannot carry; answered as null. */
class NotRepresentable extends Error {}

/** Bytes of `value` as a varint (a non-negative integer). */
function varintBytes(value: number): number {
  let bytes = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 0x80);
    bytes++;
  }
  return bytes;
}

/**
 * Protobuf fields into one growing buffer. An embedded message or a string is written after
 * one byte kept for its length, and moved up when its length needs more: most (key-values,
 * values, names) are shorter than 128 bytes, and the few longer ones (spans, groups) move
 * once each, which costs less than measuring every message before writing it.
 */
class ProtobufBytes {
  private buffer = Buffer.allocUnsafe(64 * 1024);
  private position = 0;

  bytes(): Buffer {
    return this.buffer.subarray(0, this.position);
  }

  private reserve(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.position + bytes));
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }

  varint(value: number): this {
    this.reserve(10);
    const buffer = this.buffer;
    while (value >= 0x80) {
      buffer[this.position++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    buffer[this.position++] = value;
    return this;
  }

  /** An int32 or int64 field's value: a negative one as its 64-bit two's complement (10 bytes). */
  signed(value: number): this {
    if (value >= 0) return this.varint(value);
    this.reserve(10);
    let rest = BigInt.asUintN(64, BigInt(value));
    while (rest >= 0x80n) {
      this.buffer[this.position++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
    }
    this.buffer[this.position++] = Number(rest);
    return this;
  }

  tag(field: number, wireType: number): this {
    return this.varint((field << 3) | wireType);
  }

  fixed32(value: number): this {
    this.reserve(4);
    this.buffer.writeUInt32LE(value, this.position);
    this.position += 4;
    return this;
  }

  double(value: number): this {
    this.reserve(8);
    this.buffer.writeDoubleLE(value, this.position);
    this.position += 8;
    return this;
  }

  /** A length-delimited field's start: where its content begins (after a byte kept for its length). */
  begin(field: number): number {
    this.tag(field, LENGTH_DELIMITED).reserve(1);
    this.position++;
    return this.position;
  }

  /** Writes the length of the field begun at `start`, moving its content up when the length takes more than a byte. */
  end(start: number): void {
    const length = this.position - start;
    if (length < 0x80) {
      this.buffer[start - 1] = length;
      return;
    }
    const extra = varintBytes(length) - 1;
    this.reserve(extra);
    this.buffer.copyWithin(start + extra, start, this.position);
    const end = this.position + extra;
    this.position = start - 1;
    this.varint(length);
    this.position = end;
  }

  string(field: number, value: string): void {
    const start = this.begin(field);
    this.reserve(value.length * 3);
    this.position += this.buffer.write(value, this.position, "utf8");
    this.end(start);
  }

  /** A bytes field given as hex (whole bytes, checked by the caller). */
  hex(field: number, hex: string): void {
    const start = this.begin(field);
    this.reserve(hex.length / 2);
    this.position += this.buffer.write(hex, this.position, "hex");
    this.end(start);
  }

  fixed64(value: bigint): this {
    this.reserve(8);
    this.buffer.writeBigUInt64LE(value, this.position);
    this.position += 8;
    return this;
  }
}

/** The batch as a binary `ExportTraceServiceRequest`, or null when protobuf cannot carry it (above). */
export function encodeSpanBatch(batch: OtlpSpanBatch): Buffer | null {
  const w = new ProtobufBytes();
  try {
    for (const resource of batch.resources) {
      const at = w.begin(1);
      resourceSpans(w, resource);
      w.end(at);
    }
  } catch (error) {
    if (error instanceof NotRepresentable) return null;
    throw error;
  }
  return w.bytes();
}

function resourceSpans(w: ProtobufBytes, group: OtlpResourceGroup): void {
  const resource = w.begin(1);
  attributes(w, 1, group.attributes, 1);
  count(w, 2, group.droppedAttributesCount);
  w.end(resource);
  for (const scope of group.scopes) {
    const at = w.begin(2);
    scopeSpans(w, scope);
    w.end(at);
  }
  text(w, 3, group.schemaUrl);
}

function scopeSpans(w: ProtobufBytes, group: OtlpScopeGroup): void {
  const { scope } = group;
  const at = w.begin(1);
  text(w, 1, scope.name);
  text(w, 2, scope.version);
  attributes(w, 3, scope.attributes, 1);
  count(w, 4, scope.droppedAttributesCount);
  w.end(at);
  for (const span of group.spans) {
    const spanAt = w.begin(2);
    spanMessage(w, span);
    w.end(spanAt);
  }
  text(w, 3, group.schemaUrl);
}

function spanMessage(w: ProtobufBytes, span: OtlpSpan): void {
  id(w, 1, span.traceId);
  id(w, 2, span.spanId);
  text(w, 3, span.traceState);
  id(w, 4, span.parentSpanId);
  text(w, 5, span.name);
  if (span.kind !== 0) w.tag(6, VARINT).signed(span.kind);
  time(w, 7, span.startTimeUnixNano);
  time(w, 8, span.endTimeUnixNano);
  attributes(w, 9, span.attributes, 1);
  count(w, 10, span.droppedAttributesCount);
  for (const event of span.events) {
    const at = w.begin(11);
    eventMessage(w, event);
    w.end(at);
  }
  count(w, 12, span.droppedEventsCount);
  for (const link of span.links) {
    const at = w.begin(13);
    linkMessage(w, link);
    w.end(at);
  }
  count(w, 14, span.droppedLinksCount);
  const status = w.begin(15);
  text(w, 2, span.status.message);
  if (span.status.code !== 0) w.tag(3, VARINT).signed(span.status.code);
  w.end(status);
  flags(w, 16, span.flags);
}

function eventMessage(w: ProtobufBytes, event: OtlpEvent): void {
  time(w, 1, event.timeUnixNano);
  text(w, 2, event.name);
  attributes(w, 3, event.attributes, 1);
  count(w, 4, event.droppedAttributesCount);
}

function linkMessage(w: ProtobufBytes, link: OtlpLink): void {
  id(w, 1, link.traceId);
  id(w, 2, link.spanId);
  text(w, 3, link.traceState);
  attributes(w, 4, link.attributes, 1);
  count(w, 5, link.droppedAttributesCount);
  flags(w, 6, link.flags);
}

/** `repeated KeyValue` in field `field`; `level`: the nesting level of their values (1 for a span's own). */
function attributes(w: ProtobufBytes, field: number, values: OtlpAttributes, level: number): void {
  for (const key of Object.keys(values)) {
    const at = w.begin(field);
    text(w, 1, key);
    const value = values[key]!;
    if (value !== null) {
      const valueAt = w.begin(2);
      anyValue(w, value, level);
      w.end(valueAt);
    }
    w.end(at);
  }
}

/** An `AnyValue`'s one member, written even when it is its type's default (an empty message reads as null). */
function anyValue(w: ProtobufBytes, value: JsonValue, level: number): void {
  if (level > MAX_VALUE_LEVELS) throw new NotRepresentable();
  if (typeof value === "string") w.string(1, value);
  else if (typeof value === "boolean") w.tag(2, VARINT).varint(value ? 1 : 0);
  else if (typeof value === "number") {
    // An int64 reads back as the same number only when it is a safe integer (and not -0).
    if (Number.isSafeInteger(value) && !Object.is(value, -0)) w.tag(3, VARINT).signed(value);
    else w.tag(4, FIXED64).double(value);
  } else if (Array.isArray(value)) {
    const array = w.begin(5);
    for (const item of value) {
      const at = w.begin(1);
      if (item !== null) anyValue(w, item, level + 1);
      w.end(at);
    }
    w.end(array);
  } else if (value !== null) {
    const list = w.begin(6);
    attributes(w, 1, value, level + 1);
    w.end(list);
  }
}

function text(w: ProtobufBytes, field: number, value: string): void {
  if (value !== "") w.string(field, value);
}

function id(w: ProtobufBytes, field: number, hex: string): void {
  if (!HEX_BYTES.test(hex)) throw new NotRepresentable();
  if (hex !== "") w.hex(field, hex);
}

function count(w: ProtobufBytes, field: number, value: number): void {
  if (value !== 0) w.tag(field, VARINT).varint(value);
}

function flags(w: ProtobufBytes, field: number, value: number): void {
  if (value !== 0) w.tag(field, FIXED32).fixed32(value);
}

/** A `fixed64` time in nanoseconds. */
function time(w: ProtobufBytes, field: number, nanos: bigint): void {
  if (nanos !== 0n) w.tag(field, FIXED64).fixed64(nanos);
}
