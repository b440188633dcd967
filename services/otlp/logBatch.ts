import type { OtlpAttributes, OtlpScope } from "./batch.js";
import type { JsonValue } from "../json.js";
/**
 * The one normalized form of an OTLP `ExportLogsServiceRequest`, whatever its encoding, with
 * the conventions of batch.ts (hex ids, "" when absent; nanoseconds as bigint; enums as
 * integers; attribute and body values as plain JSON).
 */

export interface OtlpLogBatch {
  readonly resources: readonly OtlpLogResourceGroup[];
}

export interface OtlpLogResourceGroup {
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
  readonly schemaUrl: string;
  readonly scopes: readonly OtlpLogScopeGroup[];
}

export interface OtlpLogScopeGroup {
  readonly scope: OtlpScope;
  readonly schemaUrl: string;
  readonly records: readonly OtlpLogRecord[];
}

export interface OtlpLogRecord {
  readonly timeUnixNano: bigint;
  readonly observedTimeUnixNano: bigint;
  readonly severityNumber: number;
  readonly severityText: string;
  readonly body: JsonValue;
  readonly attributes: OtlpAttributes;
  readonly droppedAttributesCount: number;
  readonly flags: number;
  /** "" when the record belongs to no span. */
  readonly traceId: string;
  readonly spanId: string;
  /** The event's name (OTLP 1.5's `event_name`); "" for a plain log record. */
  readonly eventName: string;
}
