/**
 * OTLP/JSON → the normalized batch. The OTLP/JSON rules: keys are lowerCamelCase (the
 * original snake_case names are not valid OTLP/JSON and are ignored like any unknown
 * field), ids are hex strings, 64-bit integers may be strings or numbers, enums are
 * integers (their names, e.g. "SPAN_KIND_SERVER", are accepted too), bytes are base64.
 * `null` reads as the field's default. A value of the wrong type is an `OtlpDecodeError`
 * naming its path.
 */
import { doubleValue, int64Value, SPAN_KIND_NAMES, STATUS_CODE_NAMES, type OtlpAttributes, type OtlpEvent, type OtlpLink, type OtlpResourceGroup, type OtlpScope, type OtlpScopeGroup, type OtlpSpan, type OtlpSpanBatch } from "./batch.js";
import { OtlpDecodeError } from "./decodeError.js";
import { setOwn } from "./nest.js";
import type { JsonObject, JsonValue } from "../json.js";
import { checkJsonBytes } from "../jsonBounds.js";
import { parseJsonBody } from "../jsonPieces.js";

type JsonRecord = Readonly<Record<string, unknown>>;

const UINT64_MAX = (1n << 64n) - 1n;
const UINT32_MAX = 0xffffffff;
const HEX_ID = /^(?:[0-9a-fA-F]{2})*$/;
const DECIMAL = /^-?\d+$/;
/** Nesting limit for attribute values (arrays and kvlists), as protobufjs's recursion limit. */
export const MAX_VALUE_DEPTH = 100;

/**
 * Containers an OTLP/JSON body may nest: the request's own levels, then attribute values
 * `MAX_VALUE_DEPTH` deep of up to 4 containers each (`{"kvlistValue": {"values": [{"value": ...`);
 * the decoder counts the value levels itself.
 */
export const MAX_JSON_DEPTH = 16 + 4 * MAX_VALUE_DEPTH;

/**
 * Decodes an OTLP/JSON `ExportTraceServiceRequest`. The bytes are checked first (valid UTF-8,
 * containers at most MAX_JSON_DEPTH deep, no lone surrogate: services/jsonBounds.ts), then
 * parsed, a large export's spans in pieces (services/jsonPieces.ts).
 */
export function batchFromJson(body: Buffer | string): OtlpSpanBatch {
  const request = parseRequest(body);
  return { resources: list(request, "resourceSpans", "").map((rs, i) => resourceGroup(rs, `resourceSpans[${i}]`)) };
}

function resourceGroup(value: unknown, path: string): OtlpResourceGroup {
  const { group, ...head } = resourceGroupHead(value, path);
  return { ...head, scopes: list(group, "scopeSpans", path).map((ss, i) => scopeGroup(ss, `${path}.scopeSpans[${i}]`)) };
}

function scopeGroup(value: unknown, path: string): OtlpScopeGroup {
  const { group, ...head } = scopeGroupHead(value, path);
  return { ...head, spans: list(group, "spans", path).map((s, i) => span(s, `${path}.spans[${i}]`)) };
}

/** An OTLP/JSON request's object, after the byte checks; an OtlpDecodeError when it is not JSON. */
export function parseRequest(body: Buffer | string): JsonRecord {
  let parsed: unknown;
  try {
    const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
    parsed = parseJsonBody(bytes, checkJsonBytes(bytes, MAX_JSON_DEPTH));
  } catch (error) {
    throw new OtlpDecodeError(`invalid JSON: ${(error as Error).message}`);
  }
  return record(parsed, "request");
}

/** What every resource group has (traces and logs alike), and its object for the rest. */
export function resourceGroupHead(value: unknown, path: string): { group: JsonRecord; attributes: OtlpAttributes; droppedAttributesCount: number; schemaUrl: string } {
  const group = record(value, path);
  const resource = optionalRecord(group, "resource", path) ?? {};
  return {
    group,
    attributes: attributes(resource, "attributes", `${path}.resource`),
    droppedAttributesCount: uint32(resource, "droppedAttributesCount", `${path}.resource`),
    schemaUrl: text(group, "schemaUrl", path),
  };
}

/** What every scope group has (traces and logs alike), and its object for the rest. */
export function scopeGroupHead(value: unknown, path: string): { group: JsonRecord; scope: OtlpScope; schemaUrl: string } {
  const group = record(value, path);
  const scope = optionalRecord(group, "scope", path) ?? {};
  const scopePath = `${path}.scope`;
  return {
    group,
    scope: {
      name: text(scope, "name", scopePath),
      version: text(scope, "version", scopePath),
      attributes: attributes(scope, "attributes", scopePath),
      droppedAttributesCount: uint32(scope, "droppedAttributesCount", scopePath),
    },
    schemaUrl: text(group, "schemaUrl", path),
  };
}

function span(value: unknown, path: string): OtlpSpan {
  const s = record(value, path);
  const status = optionalRecord(s, "status", path) ?? {};
  return {
    traceId: id(s, "traceId", path),
    spanId: id(s, "spanId", path),
    traceState: text(s, "traceState", path),
    parentSpanId: id(s, "parentSpanId", path),
    flags: uint32(s, "flags", path),
    name: text(s, "name", path),
    kind: enumValue(s, "kind", SPAN_KIND_NAMES, path),
    startTimeUnixNano: uint64(s, "startTimeUnixNano", path),
    endTimeUnixNano: uint64(s, "endTimeUnixNano", path),
    attributes: attributes(s, "attributes", path),
    droppedAttributesCount: uint32(s, "droppedAttributesCount", path),
    events: list(s, "events", path).map((e, i) => event(e, `${path}.events[${i}]`)),
    droppedEventsCount: uint32(s, "droppedEventsCount", path),
    links: list(s, "links", path).map((l, i) => link(l, `${path}.links[${i}]`)),
    droppedLinksCount: uint32(s, "droppedLinksCount", path),
    status: {
      code: enumValue(status, "code", STATUS_CODE_NAMES, `${path}.status`),
      message: text(status, "message", `${path}.status`),
    },
  };
}

function event(value: unknown, path: string): OtlpEvent {
  const e = record(value, path);
  return {
    timeUnixNano: uint64(e, "timeUnixNano", path),
    name: text(e, "name", path),
    attributes: attributes(e, "attributes", path),
    droppedAttributesCount: uint32(e, "droppedAttributesCount", path),
  };
}

function link(value: unknown, path: string): OtlpLink {
  const l = record(value, path);
  return {
    traceId: id(l, "traceId", path),
    spanId: id(l, "spanId", path),
    traceState: text(l, "traceState", path),
    attributes: attributes(l, "attributes", path),
    droppedAttributesCount: uint32(l, "droppedAttributesCount", path),
    flags: uint32(l, "flags", path),
  };
}

/** A `repeated KeyValue` field. */
export function attributes(o: JsonRecord, key: string, path: string, depth = 0): OtlpAttributes {
  const items = list(o, key, path);
  const out: JsonObject = {};
  items.forEach((item, i) => {
    const at = `${path}.${key}[${i}]`;
    const kv = record(item, at);
    setOwn(out, text(kv, "key", at), anyValue(kv["value"], `${at}.value`, depth + 1));
  });
  return out;
}

export function anyValue(value: unknown, path: string, depth: number): JsonValue {
  if (value === undefined || value === null) return null;
  if (depth > MAX_VALUE_DEPTH) throw new OtlpDecodeError(`${path}: nested deeper than ${MAX_VALUE_DEPTH} levels`);
  const v = record(value, path);
  if (isSet(v["stringValue"])) return text(v, "stringValue", path);
  if (isSet(v["boolValue"])) {
    if (typeof v["boolValue"] !== "boolean") throw wrongType(`${path}.boolValue`, "a boolean");
    return v["boolValue"];
  }
  if (isSet(v["intValue"])) return int64Value(integer(v["intValue"], `${path}.intValue`));
  if (isSet(v["doubleValue"])) return double(v["doubleValue"], `${path}.doubleValue`);
  if (isSet(v["arrayValue"])) {
    const array = record(v["arrayValue"], `${path}.arrayValue`);
    return list(array, "values", `${path}.arrayValue`).map((item, i) => anyValue(item, `${path}.arrayValue.values[${i}]`, depth + 1));
  }
  if (isSet(v["kvlistValue"])) return attributes(record(v["kvlistValue"], `${path}.kvlistValue`), "values", `${path}.kvlistValue`, depth);
  if (isSet(v["bytesValue"])) return Buffer.from(text(v, "bytesValue", path), "base64").toString("base64");
  return null;
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null;
}

function wrongType(path: string, expected: string): OtlpDecodeError {
  return new OtlpDecodeError(`${path}: expected ${expected}`);
}

export function record(value: unknown, path: string): JsonRecord {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw wrongType(path || "request", "an object");
  return value as JsonRecord;
}

export function optionalRecord(o: JsonRecord, key: string, path: string): JsonRecord | undefined {
  const value = o[key];
  return isSet(value) ? record(value, `${path}.${key}`) : undefined;
}

export function list(o: JsonRecord, key: string, path: string): readonly unknown[] {
  const value = o[key];
  if (!isSet(value)) return [];
  if (!Array.isArray(value)) throw wrongType(path ? `${path}.${key}` : key, "an array");
  return value;
}

export function text(o: JsonRecord, key: string, path: string): string {
  const value = o[key];
  if (!isSet(value)) return "";
  if (typeof value !== "string") throw wrongType(`${path}.${key}`, "a string");
  return value;
}

/** Hex ids, lowercased; a non-hex string is kept as sent (the span is rejected later). */
export function id(o: JsonRecord, key: string, path: string): string {
  const value = text(o, key, path);
  return HEX_ID.test(value) ? value.toLowerCase() : value;
}

/** A signed 64-bit integer: a JSON integer or its decimal string. */
function integer(value: unknown, path: string): bigint {
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  if (typeof value === "string" && DECIMAL.test(value)) return BigInt(value);
  throw wrongType(path, "an integer");
}

export function uint64(o: JsonRecord, key: string, path: string): bigint {
  const value = o[key];
  if (!isSet(value)) return 0n;
  const n = integer(value, `${path}.${key}`);
  if (n < 0n || n > UINT64_MAX) throw wrongType(`${path}.${key}`, "an unsigned 64-bit integer");
  return n;
}

export function uint32(o: JsonRecord, key: string, path: string): number {
  const value = o[key];
  if (!isSet(value)) return 0;
  const n = integer(value, `${path}.${key}`);
  if (n < 0n || n > BigInt(UINT32_MAX)) throw wrongType(`${path}.${key}`, "an unsigned 32-bit integer");
  return Number(n);
}

function double(value: unknown, path: string): number | string {
  if (typeof value === "number") return value;
  if (typeof value === "string") {
    if (value === "NaN" || value === "Infinity" || value === "-Infinity") return value;
    const n = Number(value);
    if (value.trim() !== "" && Number.isFinite(n)) return doubleValue(n);
  }
  throw wrongType(path, "a number");
}

/** An enum: its integer value or its name from `names` (index = value). */
export function enumValue(o: JsonRecord, key: string, names: readonly string[], path: string): number {
  const value = o[key];
  if (!isSet(value)) return 0;
  if (typeof value === "string") {
    const index = names.indexOf(value);
    if (index >= 0) return index;
    if (!DECIMAL.test(value)) throw wrongType(`${path}.${key}`, `one of ${names.join(", ")} or an integer`);
  }
  const n = integer(value, `${path}.${key}`);
  if (n < -(2n ** 31n) || n >= 2n ** 31n) throw wrongType(`${path}.${key}`, "a 32-bit enum value");
  return Number(n);
}
