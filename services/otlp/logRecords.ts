/**
 * OTLP log records → the records kept beside their calls: the records of a span (a valid trace
 * id and span id), each as `OtlpLogRecord`, in `otlp_log_records` events of at most
 * `maxEventBytes` of records each (a queue message stays under the brokers' limit). A record
 * that names no span, has a time beyond what microseconds keep exactly, or is larger than
 * `maxEventBytes` alone, is rejected on its own (counted, with a short reason).
 */
import type { OtlpLogRecord, OtlpLogRecordsEvent } from "../queue/events.js";
import type { OtlpLogBatch, OtlpLogRecord as DecodedRecord } from "./logBatch.js";
import { FIRST_INEXACT_NANOS, idForm, MAX_REJECTION_REASONS, SPAN_ID_LENGTH, TRACE_ID_LENGTH } from "./mapSpan.js";
import type { JsonObject } from "../json.js";

export interface MappedLogRecords {
  readonly events: OtlpLogRecordsEvent[];
  readonly accepted: number;
  readonly rejected: number;
  readonly errors: string[];
}

export function logRecordEvents(batch: OtlpLogBatch, projectId: string, maxEventBytes: number): MappedLogRecords {
  const events: OtlpLogRecordsEvent[] = [];
  const errors: string[] = [];
  let rejected = 0;
  let accepted = 0;
  let records: OtlpLogRecord[] = [];
  let bytes = 0;
  let position = 0;
  const flush = () => {
    if (records.length > 0) events.push({ kind: "otlp_log_records", project_id: projectId, id: records[0]!.span_id, records });
    records = [];
    bytes = 0;
  };
  for (const resource of batch.resources) {
    for (const group of resource.scopes) {
      for (const [index, decoded] of group.records.entries()) {
        const reason = rejection(decoded);
        const record = reason === null ? keptRecord(decoded, group.scope.name, position++) : null;
        const size = record === null ? 0 : Buffer.byteLength(JSON.stringify(record), "utf8");
        const why = reason ?? (size > maxEventBytes ? `${size} bytes, over the limit of ${maxEventBytes}` : null);
        if (why !== null || record === null) {
          rejected += 1;
          if (errors.length < MAX_REJECTION_REASONS) errors.push(`log record ${index} of scope ${JSON.stringify(group.scope.name.slice(0, 64))}: ${why}`);
          continue;
        }
        if (bytes + size > maxEventBytes) flush();
        records.push(record);
        bytes += size;
        accepted += 1;
      }
    }
  }
  flush();
  return { events, accepted, rejected, errors };
}

function rejection(record: DecodedRecord): string | null {
  if (idForm(record.traceId, TRACE_ID_LENGTH) !== "id" || idForm(record.spanId, SPAN_ID_LENGTH) !== "id") {
    return "no span (a valid trace id and span id): only the records of spans are kept";
  }
  if (timeOf(record) >= FIRST_INEXACT_NANOS) return "time out of range";
  return null;
}

/** The record's time, else when it was observed (OTLP: either may be unset). */
function timeOf(record: DecodedRecord): bigint {
  return record.timeUnixNano !== 0n ? record.timeUnixNano : record.observedTimeUnixNano;
}

/** Before OTLP had `event_name`, the semantic conventions put it in the `event.name` attribute. */
function legacyEventName(record: DecodedRecord): string {
  const name = record.attributes["event.name"];
  return typeof name === "string" ? name : "";
}

function keptRecord(record: DecodedRecord, scopeName: string, position: number): OtlpLogRecord {
  return {
    trace_id: record.traceId,
    span_id: record.spanId,
    time: Number(timeOf(record) / 1000n),
    position,
    event_name: record.eventName || legacyEventName(record),
    severity_number: record.severityNumber,
    severity_text: record.severityText,
    body: record.body,
    attributes: record.attributes as JsonObject,
    scope_name: scopeName,
  };
}
