import { z } from "./zod.js";

/**
 * `opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse` in its OTLP/JSON
 * form (lowerCamelCase, int64 as a decimal string). A protobuf request is answered with
 * the same message in protobuf; a full success is the empty message (`{}`, zero bytes).
 */
export const ExportTracePartialSuccess = z
  .object({
    rejectedSpans: z.string().openapi({ description: "How many spans were rejected (int64, as a decimal string)", example: "2" }),
    errorMessage: z.string().openapi({ description: "Why, for the first few rejected spans" }),
  })
  .openapi("ExportTracePartialSuccess");

export const ExportTraceServiceResponse = z
  .object({ partialSuccess: ExportTracePartialSuccess.optional() })
  .openapi("ExportTraceServiceResponse", {
    description:
      "OTLP/HTTP answer, in the request's content type (application/x-protobuf or application/json). " +
      "Errors (400, 401, 403, 413, 415, 429, 503) carry a google.rpc.Status {code, message} in the same content type.",
  });

/** `opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse`, as ExportTraceServiceResponse. */
export const ExportLogsPartialSuccess = z
  .object({
    rejectedLogRecords: z.string().openapi({ description: "How many log records were rejected (int64, as a decimal string)", example: "2" }),
    errorMessage: z.string().openapi({ description: "Why, for the first few rejected records" }),
  })
  .openapi("ExportLogsPartialSuccess");

export const ExportLogsServiceResponse = z
  .object({ partialSuccess: ExportLogsPartialSuccess.optional() })
  .openapi("ExportLogsServiceResponse", {
    description:
      "OTLP/HTTP answer to a logs export, in the request's content type (application/x-protobuf or application/json). " +
      "Errors (400, 401, 403, 413, 415, 429, 503) carry a google.rpc.Status {code, message} in the same content type.",
  });
