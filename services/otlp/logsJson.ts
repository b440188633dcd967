/**
 * OTLP/JSON `ExportLogsServiceRequest` → the normalized log batch, by the rules and readers of
 * json.ts (lowerCamelCase keys, hex ids, 64-bit integers as numbers or strings, enums as
 * integers or names; a value of the wrong type is an `OtlpDecodeError` naming its path).
 */
import type { OtlpLogBatch, OtlpLogRecord, OtlpLogResourceGroup, OtlpLogScopeGroup } from "./logBatch.js";
import { anyValue, attributes, enumValue, id, list, parseRequest, record, resourceGroupHead, scopeGroupHead, text, uint32, uint64 } from "./json.js";

/** `SeverityNumber` names by value, as OTLP/JSON may send them. */
const SEVERITY_NAMES: readonly string[] = [
  "SEVERITY_NUMBER_UNSPECIFIED",
  ...["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL"].flatMap((level) => [1, 2, 3, 4].map((n) => `SEVERITY_NUMBER_${level}${n === 1 ? "" : n}`)),
];

export function logBatchFromJson(body: Buffer | string): OtlpLogBatch {
  const request = parseRequest(body);
  return { resources: list(request, "resourceLogs", "").map((rl, i) => resourceGroup(rl, `resourceLogs[${i}]`)) };
}

function resourceGroup(value: unknown, path: string): OtlpLogResourceGroup {
  const { group, ...head } = resourceGroupHead(value, path);
  return { ...head, scopes: list(group, "scopeLogs", path).map((sl, i) => scopeGroup(sl, `${path}.scopeLogs[${i}]`)) };
}

function scopeGroup(value: unknown, path: string): OtlpLogScopeGroup {
  const { group, ...head } = scopeGroupHead(value, path);
  return { ...head, records: list(group, "logRecords", path).map((lr, i) => logRecord(lr, `${path}.logRecords[${i}]`)) };
}

function logRecord(value: unknown, path: string): OtlpLogRecord {
  const lr = record(value, path);
  return {
    timeUnixNano: uint64(lr, "timeUnixNano", path),
    observedTimeUnixNano: uint64(lr, "observedTimeUnixNano", path),
    severityNumber: enumValue(lr, "severityNumber", SEVERITY_NAMES, path),
    severityText: text(lr, "severityText", path),
    body: anyValue(lr["body"], `${path}.body`, 1),
    attributes: attributes(lr, "attributes", path),
    droppedAttributesCount: uint32(lr, "droppedAttributesCount", path),
    flags: uint32(lr, "flags", path),
    traceId: id(lr, "traceId", path),
    spanId: id(lr, "spanId", path),
    eventName: text(lr, "eventName", path),
  };
}
