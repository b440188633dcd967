/**
 * A binary `ExportLogsServiceRequest` read into the normalized log batch (logBatch.ts), with
 * the wire readers of protobufReader.ts and its rules (a known field read by its declared
 * type, a later singular field replaces an earlier one, protobufjs's nesting limit).
 */
import protobuf from "protobufjs";
import type { OtlpScope } from "./batch.js";
import { OtlpDecodeError } from "./decodeError.js";
import type { OtlpLogBatch, OtlpLogRecord, OtlpLogResourceGroup, OtlpLogScopeGroup } from "./logBatch.js";
import { anyValue, enter, fixed64, hexBytes, instrumentationScope, keyValue, leave, readString, resourceMessage } from "./protobufReader.js";
import type { JsonObject, JsonValue } from "../json.js";

type Reader = protobuf.Reader;

/** Decodes a binary `ExportLogsServiceRequest`; an empty body is an empty request. */
export function logBatchFromProtobuf(body: Uint8Array): OtlpLogBatch {
  const buffer = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  try {
    const r = protobuf.Reader.create(buffer);
    const resources: OtlpLogResourceGroup[] = [];
    while (r.pos < r.len) {
      const tag = r.uint32();
      if (tag >>> 3 === 1) resources.push(resourceLogs(r, r.uint32(), 1));
      else r.skipType(tag & 7, 0);
    }
    return { resources };
  } catch (error) {
    throw new OtlpDecodeError(`invalid protobuf ExportLogsServiceRequest: ${(error as Error).message}`);
  }
}

function resourceLogs(r: Reader, length: number, depth: number): OtlpLogResourceGroup {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let resource: ReturnType<typeof resourceMessage> | null = null;
  const scopes: OtlpLogScopeGroup[] = [];
  let schemaUrl = "";
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: resource = resourceMessage(r, r.uint32(), depth + 1); break;
      case 2: scopes.push(scopeLogs(r, r.uint32(), depth + 1)); break;
      case 3: schemaUrl = readString(r); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { attributes: resource?.attributes ?? {}, droppedAttributesCount: resource?.droppedAttributesCount ?? 0, schemaUrl, scopes };
}

function scopeLogs(r: Reader, length: number, depth: number): OtlpLogScopeGroup {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let scope: OtlpScope | null = null;
  const records: OtlpLogRecord[] = [];
  let schemaUrl = "";
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: scope = instrumentationScope(r, r.uint32(), depth + 1); break;
      case 2: records.push(logRecord(r, r.uint32(), depth + 1)); break;
      case 3: schemaUrl = readString(r); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { scope: scope ?? { name: "", version: "", attributes: {}, droppedAttributesCount: 0 }, schemaUrl, records };
}

function logRecord(r: Reader, length: number, depth: number): OtlpLogRecord {
  const end = enter(r, length, depth);
  const outerLen = r.len;
  r.len = end;
  let timeUnixNano = 0n;
  let observedTimeUnixNano = 0n;
  let severityNumber = 0;
  let severityText = "";
  let body: JsonValue = null;
  const attributes: JsonObject = {};
  let droppedAttributesCount = 0;
  let flags = 0;
  let traceId = "";
  let spanId = "";
  let eventName = "";
  while (r.pos < end) {
    const tag = r.uint32();
    switch (tag >>> 3) {
      case 1: timeUnixNano = fixed64(r); break;
      case 2: severityNumber = r.int32(); break;
      case 3: severityText = readString(r); break;
      case 5: body = anyValue(r, r.uint32(), depth + 1); break;
      case 6: keyValue(r, r.uint32(), depth + 1, attributes); break;
      case 7: droppedAttributesCount = r.uint32(); break;
      case 8: flags = r.fixed32(); break;
      case 9: traceId = hexBytes(r); break;
      case 10: spanId = hexBytes(r); break;
      case 11: observedTimeUnixNano = fixed64(r); break;
      case 12: eventName = readString(r); break;
      default: r.skipType(tag & 7, depth);
    }
  }
  leave(r, end, outerLen);
  return { timeUnixNano, observedTimeUnixNano, severityNumber, severityText, body, attributes, droppedAttributesCount, flags, traceId, spanId, eventName };
}
