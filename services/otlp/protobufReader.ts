/**
 * A binary `ExportTraceServiceRequest` read straight into the normalized batch (batch.ts),
 * with protobufjs's `Reader` for the wire primitives but none of its message objects: the
 * generated decoders build a class instance per message (defaults on prototypes, `Long`s,
 * id `Buffer`s) that the conversion then copied again.
 *
 * It reads exactly what protobufjs's generated `decode` reads, quirks included (a test
 * compares both on damaged bodies): a known field is read by its declared type whatever
 * its wire type; a later singular field replaces an earlier one, messages included (no
 * merge); a string's length is cut at the end of its message; the nesting limit is
 * protobufjs's `recursionLimit`, counted per message as there; and of the `AnyValue` oneof,
 * the member whose first occurrence came last wins, with its last value (protobufjs's oneof
 * getter reads the latest own property that is set).
 */
import protobuf from "protobufjs";
import { doubleValue, int64Value, type OtlpAttributes, type OtlpEvent, type OtlpLink, type OtlpResourceGroup, type OtlpScope, type OtlpScopeGroup, type OtlpSpan, type OtlpSpanBatch, type OtlpStatus } from "./batch.js";
import { OtlpDecodeError } from "./decodeError.js";
import { setOwn } from "./nest.js";
import type { JsonObject, JsonValue } from "../json.js";

type Reader = protobuf.Reader;

export const RECURSION_LIMIT: number = (protobuf.Reader as unknown as { recursionLimit?: number }).recursionLimit ?? 100;

/**
 * Set while `spansWithoutText` reads a body: each span's encoded length, in order. Strings and
 * base64 bytes then read as "" and attributes are not kept, though their bytes are walked and
 * checked as in a full read, so that a body fails the same way in both.
 */
let encodedSpanLengths: number[] | null = null;

/** Decodes a binary `ExportTraceServiceRequest`. */
export function batchFromProtobuf(body: Uint8Array): OtlpSpanBatch {
  const buffer = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  try {
    return exportRequest(protobuf.Reader.create(buffer));
  } catch (error) {
    throw new OtlpDecodeError(`invalid protobuf ExportTraceServiceRequest: ${(error as Error).message}`);
  }
}

/**
 * The request's structure, ids and times without its text (names, attributes, events' and
 * links' text all empty), and each span's encoded length: what checking an export needs
 * (mapSpan.ts, `checkEncodedSpans`), at a fraction of a full read. Throws as `batchFromProtobuf`.
 */
export function spansWithoutText(body: Uint8Array): { batch: OtlpSpanBatch; encodedLengths: number[] } {
  const encodedLengths: number[] = [];
  encodedSpanLengths = encodedLengths;
  try {
    return { batch: batchFromProtobuf(body), encodedLengths };
  } finally {
    encodedSpanLengths = null;
  }
}

/** Enters an embedded message of `length` bytes (already read): its end, after protobufjs's checks. */
export function enter(r: Reader, length: number, depth: number): number {
  if (depth > RECURSION_LIMIT) throw Error("maximum nesting depth exceeded");
  const end = r.pos + length;
  if (end > r.len) throw RangeError("index out of range");
  return end;
}

/** Leaves an embedded message entered with `enter`; `outerLen` is the reader's limit before it. */
export function leave(r: Reader, end: number, outerLen: number): void {
  if (r.pos !== end) throw RangeError("index out of range");
  r.len = outerLen;
}

function exportRequest(r: Reader): OtlpSpanBatch {
  const resources: OtlpResourceGroup[] = [];
  const end = r.len;
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) resources.push(resourceSpans(r, r.uint32(), 1));
    else r.skipType(tag & 7, 0);
  }
  return { resources };
}

function resourceSpans(r: Reader, length: number, depth: number): OtlpResourceGroup {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let resource: { attributes: OtlpAttributes; droppedAttributesCount: number } | null = null;
  const scopes: OtlpScopeGroup[] = [];
  let schemaUrl = "";
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: resource = resourceMessage(r, r.uint32(), depth + 1); break;
      case 2: scopes.push(scopeSpans(r, r.uint32(), depth + 1)); break;
      case 3: schemaUrl = readString(r); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { attributes: resource?.attributes ?? {}, droppedAttributesCount: resource?.droppedAttributesCount ?? 0, schemaUrl, scopes };
}

export function resourceMessage(r: Reader, length: number, depth: number): { attributes: OtlpAttributes; droppedAttributesCount: number } {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  const attributes: JsonObject = {};
  let droppedAttributesCount = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: keyValue(r, r.uint32(), depth + 1, attributes); break;
      case 2: droppedAttributesCount = r.uint32(); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { attributes, droppedAttributesCount };
}

const NO_SCOPE: OtlpScope = { name: "", version: "", attributes: {}, droppedAttributesCount: 0 };

function scopeSpans(r: Reader, length: number, depth: number): OtlpScopeGroup {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let scope: OtlpScope | null = null;
  const spans: OtlpSpan[] = [];
  let schemaUrl = "";
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: scope = instrumentationScope(r, r.uint32(), depth + 1); break;
      case 2: spans.push(span(r, r.uint32(), depth + 1)); break;
      case 3: schemaUrl = readString(r); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  // A fresh object per group, as the conversion from protobufjs's objects made.
  return { scope: scope ?? { ...NO_SCOPE, attributes: {} }, schemaUrl, spans };
}

export function instrumentationScope(r: Reader, length: number, depth: number): OtlpScope {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let name = "";
  let version = "";
  const attributes: JsonObject = {};
  let droppedAttributesCount = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: name = readString(r); break;
      case 2: version = readString(r); break;
      case 3: keyValue(r, r.uint32(), depth + 1, attributes); break;
      case 4: droppedAttributesCount = r.uint32(); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { name, version, attributes, droppedAttributesCount };
}

const NO_EVENTS: readonly OtlpEvent[] = Object.freeze([]);
const NO_LINKS: readonly OtlpLink[] = Object.freeze([]);

function span(r: Reader, length: number, depth: number): OtlpSpan {
  const end = enter(r, length, depth);
  encodedSpanLengths?.push(length);
  const outerLen = r.len;
  r.len = end;
  let traceId = "";
  let spanId = "";
  let traceState = "";
  let parentSpanId = "";
  let flags = 0;
  let name = "";
  let kind = 0;
  let startTimeUnixNano = 0n;
  let endTimeUnixNano = 0n;
  const attributes: JsonObject = {};
  let droppedAttributesCount = 0;
  let events: OtlpEvent[] | null = null;
  let droppedEventsCount = 0;
  let links: OtlpLink[] | null = null;
  let droppedLinksCount = 0;
  let status: OtlpStatus | null = null;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: traceId = hexBytes(r); break;
      case 2: spanId = hexBytes(r); break;
      case 3: traceState = readString(r); break;
      case 4: parentSpanId = hexBytes(r); break;
      case 5: name = readString(r); break;
      case 6: kind = r.int32(); break;
      case 7: startTimeUnixNano = fixed64(r); break;
      case 8: endTimeUnixNano = fixed64(r); break;
      case 9: keyValue(r, r.uint32(), depth + 1, attributes); break;
      case 10: droppedAttributesCount = r.uint32(); break;
      case 11: (events ??= []).push(spanEvent(r, r.uint32(), depth + 1)); break;
      case 12: droppedEventsCount = r.uint32(); break;
      case 13: (links ??= []).push(spanLink(r, r.uint32(), depth + 1)); break;
      case 14: droppedLinksCount = r.uint32(); break;
      case 15: status = spanStatus(r, r.uint32(), depth + 1); break;
      case 16: flags = r.fixed32(); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return {
    traceId, spanId, traceState, parentSpanId, flags, name, kind, startTimeUnixNano, endTimeUnixNano,
    attributes, droppedAttributesCount,
    events: events ?? NO_EVENTS, droppedEventsCount,
    links: links ?? NO_LINKS, droppedLinksCount,
    status: status ?? { code: 0, message: "" },
  };
}

function spanEvent(r: Reader, length: number, depth: number): OtlpEvent {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let timeUnixNano = 0n;
  let name = "";
  const attributes: JsonObject = {};
  let droppedAttributesCount = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: timeUnixNano = fixed64(r); break;
      case 2: name = readString(r); break;
      case 3: keyValue(r, r.uint32(), depth + 1, attributes); break;
      case 4: droppedAttributesCount = r.uint32(); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { timeUnixNano, name, attributes, droppedAttributesCount };
}

function spanLink(r: Reader, length: number, depth: number): OtlpLink {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let traceId = "";
  let spanId = "";
  let traceState = "";
  const attributes: JsonObject = {};
  let droppedAttributesCount = 0;
  let flags = 0;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: traceId = hexBytes(r); break;
      case 2: spanId = hexBytes(r); break;
      case 3: traceState = readString(r); break;
      case 4: keyValue(r, r.uint32(), depth + 1, attributes); break;
      case 5: droppedAttributesCount = r.uint32(); break;
      case 6: flags = r.fixed32(); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { traceId, spanId, traceState, attributes, droppedAttributesCount, flags };
}

function spanStatus(r: Reader, length: number, depth: number): OtlpStatus {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let code = 0;
  let message = "";
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 2: message = readString(r); break;
      case 3: code = r.int32(); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { code, message };
}

/** One `KeyValue`, set into `into` (a later duplicate key wins, in the first one's place). */
export function keyValue(r: Reader, length: number, depth: number, into: JsonObject): void {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let key = "";
  let value: JsonValue = null;
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: key = readString(r); break;
      case 2: value = anyValue(r, r.uint32(), depth + 1); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  if (encodedSpanLengths === null) setOwn(into, key, value);
}

/** `AnyValue` members by field number; `seen` is a bit set of them. */
export function anyValue(r: Reader, length: number, depth: number): JsonValue {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let seen = 0;
  let winner = 0;
  let text = "";
  let flag = false;
  let integer: number | string = 0;
  let double: number | string = 0;
  let array: JsonValue[] = [];
  let kvlist: JsonObject = {};
  let base64 = "";
  while (r.pos < end) {
    const tag = r.uint32();
    const field = tag >>> 3;
    switch (field) {
      case 1: text = readString(r); break;
      case 2: flag = r.bool(); break;
      case 3: integer = int64(r); break;
      case 4: double = doubleValue(r.double()); break;
      case 5: array = arrayValue(r, r.uint32(), depth + 1); break;
      case 6: kvlist = keyValueList(r, r.uint32(), depth + 1); break;
      case 7: base64 = base64Bytes(r); break;
      default: r.skipType(tag & 7, depth); continue;
    }
    const bit = 1 << field;
    if ((seen & bit) === 0) {
      seen |= bit;
      winner = field;
    }
  }
  leave(r, end, outerLen);
  switch (winner) {
    case 1: return text;
    case 2: return flag;
    case 3: return integer;
    case 4: return double;
    case 5: return array;
    case 6: return kvlist;
    case 7: return base64;
    default: return null;
  }
}

function arrayValue(r: Reader, length: number, depth: number): JsonValue[] {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  const values: JsonValue[] = [];
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) values.push(anyValue(r, r.uint32(), depth + 1));
    else r.skipType(tag & 7, depth);
  }
  leave(r, end, outerLen);
  return values;
}

function keyValueList(r: Reader, length: number, depth: number): JsonObject {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  const values: JsonObject = {};
  while (r.pos < end) {
    const tag = r.uint32();
    if (tag >>> 3 === 1) keyValue(r, r.uint32(), depth + 1, values);
    else r.skipType(tag & 7, depth);
  }
  leave(r, end, outerLen);
  return values;
}

/** Node's own `Buffer` slicers, without `toString`'s argument handling. */
interface BufferSlices {
  utf8Slice(start: number, end: number): string;
  hexSlice(start: number, end: number): string;
  base64Slice(start: number, end: number): string;
}

const slices = (r: Reader): BufferSlices => r.buf as unknown as BufferSlices;

/*
 * Short ASCII strings (attribute keys, names, enum-like values) repeat from span to span:
 * a direct-mapped cache, looked up by a hash of the bytes and checked byte by byte, gives the
 * same string again, so that it is neither decoded nor internalized as a key again.
 */
const CACHED_STRING_BYTES = 40;
const STRING_CACHE_SLOTS = 2048;
const stringCache: (string | undefined)[] = new Array<string | undefined>(STRING_CACHE_SLOTS).fill(undefined);

/** A string field as protobufjs reads it: UTF-8, its length cut at the end of the message. */
export function readString(r: Reader): string {
  const length = r.uint32();
  const start = r.pos;
  const end = Math.min(start + length, r.len);
  r.pos = end;
  if (end <= start || encodedSpanLengths !== null) return "";
  const size = end - start;
  if (size > CACHED_STRING_BYTES) return slices(r).utf8Slice(start, end);
  const buf = r.buf;
  let hash = size;
  for (let i = start; i < end; i++) {
    const byte = buf[i]!;
    if (byte >= 0x80) return slices(r).utf8Slice(start, end);
    hash = Math.imul(hash ^ byte, 0x01000193);
  }
  const slot = (hash >>> 0) % STRING_CACHE_SLOTS;
  const cached = stringCache[slot];
  if (cached !== undefined && cached.length === size && sameAscii(cached, buf, start)) return cached;
  const text = slices(r).utf8Slice(start, end);
  stringCache[slot] = text;
  return text;
}

function sameAscii(text: string, buf: Uint8Array, start: number): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) !== buf[start + i]) return false;
  return true;
}

/** A bytes field's range, checked as protobufjs checks it; the reader moves past it. */
function bytesRange(r: Reader): number {
  const length = r.uint32();
  const start = r.pos;
  if (start + length > r.len) throw RangeError("index out of range");
  r.pos = start + length;
  return start;
}

export function hexBytes(r: Reader): string {
  const start = bytesRange(r);
  return start === r.pos ? "" : slices(r).hexSlice(start, r.pos);
}

function base64Bytes(r: Reader): string {
  const start = bytesRange(r);
  return start === r.pos || encodedSpanLengths !== null ? "" : slices(r).base64Slice(start, r.pos);
}

export function fixed64(r: Reader): bigint {
  if (r.pos + 8 > r.len) throw RangeError("index out of range");
  const value = (r.buf as Buffer).readBigUInt64LE(r.pos);
  r.pos += 8;
  return value;
}

const TWO_32 = 4294967296;

/** An int64 as `int64Value` gives it: exact numbers stay numbers, without a bigint on the way. */
function int64(r: Reader): number | string {
  const long = r.int64() as unknown as { low: number; high: number } | number;
  if (typeof long === "number") return long;
  const value = long.high * TWO_32 + (long.low >>> 0);
  if (Number.isSafeInteger(value)) return value;
  return int64Value(BigInt.asIntN(64, (BigInt(long.high >>> 0) << 32n) | BigInt(long.low >>> 0)));
}
