/**
 * OTLP trace and log bodies: request decoding (protobuf or JSON, both to one normalized
 * batch) and the answer bodies (`ExportTraceServiceResponse`, `ExportLogsServiceResponse`,
 * `google.rpc.Status`), for OTLP/HTTP and OTLP/gRPC alike.
 * The caller has already removed any `Content-Encoding` and applied the body limit.
 */
import { batchFromJson } from "./json.js";
import { ExportLogsServiceResponse, ExportTraceServiceResponse, RetryInfo, RpcStatus } from "./protobuf.js";
import { batchFromProtobuf } from "./protobufReader.js";
export { spansWithoutText } from "./protobufReader.js";
import type { OtlpSpanBatch } from "./batch.js";
import type { OtlpLogBatch } from "./logBatch.js";
import { logBatchFromJson } from "./logsJson.js";
import { logBatchFromProtobuf } from "./logsProtobufReader.js";

export type { OtlpLogBatch, OtlpLogRecord } from "./logBatch.js";
export type { OtlpSpanBatch, OtlpResourceGroup, OtlpScopeGroup, OtlpScope, OtlpSpan, OtlpEvent, OtlpLink, OtlpStatus, OtlpAttributes } from "./batch.js";
export { OtlpDecodeError } from "./decodeError.js";

export type OtlpFormat = "protobuf" | "json";

export interface PartialSuccess {
  readonly rejected_spans: number;
  readonly error_message: string;
}

/** Decodes a body of either format; an empty body is an empty request. */
export function decodeRequest(format: OtlpFormat, body: Buffer): OtlpSpanBatch {
  if (body.length === 0) return { resources: [] };
  return format === "protobuf" ? decodeProtobufRequest(body) : decodeJsonRequest(body);
}

/** Decodes an `application/x-protobuf` body; an empty body is an empty request. */
export function decodeProtobufRequest(body: Buffer): OtlpSpanBatch {
  return batchFromProtobuf(body);
}

/** Decodes an `application/json` body (OTLP/JSON). */
export function decodeJsonRequest(body: Buffer | string): OtlpSpanBatch {
  return batchFromJson(body);
}

/**
 * The success answer. `partial` is given when some spans were rejected; without it the
 * answer is the empty response (`{}` in JSON, zero bytes in protobuf).
 */
export function encodeExportResponse(format: "protobuf", partial?: PartialSuccess): Buffer;
export function encodeExportResponse(format: "json", partial?: PartialSuccess): string;
export function encodeExportResponse(format: OtlpFormat, partial?: PartialSuccess): Buffer | string;
export function encodeExportResponse(format: OtlpFormat, partial?: PartialSuccess): Buffer | string {
  if (format === "json") {
    // Proto3 JSON: lowerCamelCase keys, int64 as a decimal string.
    if (!partial) return "{}";
    const { rejected_spans, error_message } = partial;
    return JSON.stringify({ partialSuccess: { rejectedSpans: String(rejected_spans), errorMessage: error_message } });
  }
  const message = ExportTraceServiceResponse.fromObject(partial ? { partial_success: partial } : {});
  return toBuffer(ExportTraceServiceResponse.encode(message).finish());
}

export interface LogsPartialSuccess {
  readonly rejected_log_records: number;
  readonly error_message: string;
}

/** Decodes an `ExportLogsServiceRequest` of either format; an empty body is an empty request. */
export function decodeLogsRequest(format: OtlpFormat, body: Buffer): OtlpLogBatch {
  if (body.length === 0) return { resources: [] };
  return format === "protobuf" ? logBatchFromProtobuf(body) : logBatchFromJson(body);
}

/** The logs success answer: the empty response, or `partial` when some records were rejected. */
export function encodeLogsExportResponse(format: "protobuf", partial?: LogsPartialSuccess): Buffer;
export function encodeLogsExportResponse(format: OtlpFormat, partial?: LogsPartialSuccess): Buffer | string;
export function encodeLogsExportResponse(format: OtlpFormat, partial?: LogsPartialSuccess): Buffer | string {
  if (format === "json") {
    if (!partial) return "{}";
    return JSON.stringify({ partialSuccess: { rejectedLogRecords: String(partial.rejected_log_records), errorMessage: partial.error_message } });
  }
  const message = ExportLogsServiceResponse.fromObject(partial ? { partial_success: partial } : {});
  return toBuffer(ExportLogsServiceResponse.encode(message).finish());
}

/** An error answer body: `google.rpc.Status` with a gRPC status `code` and no details. */
export function encodeStatus(format: "protobuf", code: number, message: string): Buffer;
export function encodeStatus(format: "json", code: number, message: string): string;
export function encodeStatus(format: OtlpFormat, code: number, message: string): Buffer | string;
export function encodeStatus(format: OtlpFormat, code: number, message: string): Buffer | string {
  if (format === "json") return JSON.stringify({ code, message });
  return toBuffer(RpcStatus.encode(RpcStatus.fromObject({ code, message })).finish());
}

const RETRY_INFO_TYPE = "type.googleapis.com/google.rpc.RetryInfo";

/**
 * OTLP/gRPC's `grpc-status-details-bin`: a `google.rpc.Status` in protobuf whose details, for
 * a refusal the client should retry (`retryAfterSeconds` not null), hold a
 * `google.rpc.RetryInfo` with that delay: the OTLP exporters wait that long before they retry
 * (and retry RESOURCE_EXHAUSTED only when it is there).
 */
export function encodeStatusDetails(code: number, message: string, retryAfterSeconds: number | null): Buffer {
  const details =
    retryAfterSeconds === null
      ? []
      : [{ type_url: RETRY_INFO_TYPE, value: RetryInfo.encode(RetryInfo.fromObject({ retry_delay: { seconds: Math.floor(retryAfterSeconds), nanos: Math.round((retryAfterSeconds % 1) * 1e9) } })).finish() }];
  return toBuffer(RpcStatus.encode(RpcStatus.fromObject({ code, message, details })).finish());
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
