import { ProjectId } from "./common.js";
import { credentials } from "./credentials.js";
import { operation, type RequestHeaders } from "./operation.js";
import { ClientError } from "../errors.js";
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

/**
 * The project an export names (the rules of OTLP/HTTP and OTLP/gRPC alike): the `project_id`
 * header (or gRPC metadata), or at some paths the user name of Basic credentials.
 */
export const PROJECT_HEADER = "project_id";

const firstValue = (headers: RequestHeaders, name: string): string | undefined => {
  const raw = headers[name];
  return Array.isArray(raw) ? raw[0] : raw;
};

/** The project the `project_id` header (or gRPC metadata) names: a 400 when it is absent or not `<entity>/<project>`. */
function projectHeader(headers: RequestHeaders): string {
  const value = firstValue(headers, PROJECT_HEADER)?.trim();
  if (!value) throw new ClientError(400, `the ${PROJECT_HEADER} header is required: ${PROJECT_HEADER}: <entity>/<project>`);
  if (!ProjectId.safeParse(value).success) throw new ClientError(400, `the ${PROJECT_HEADER} header must be <entity>/<project>, got ${JSON.stringify(value.slice(0, 200))}`);
  return value;
}

/** The user name of Basic credentials, when there are some. */
const basicUser = (headers: RequestHeaders): string | null => credentials(firstValue(headers, "authorization"))?.user ?? null;

/** Langfuse's path: the `project_id` header, else the Basic user name (Langfuse's public key), which must then be `<entity>/<project>`. */
function langfuseProject(headers: RequestHeaders): string {
  if (headers[PROJECT_HEADER] !== undefined) return projectHeader(headers);
  const user = basicUser(headers);
  if (!user) throw new ClientError(400, `name the project: the ${PROJECT_HEADER} header, or Basic credentials whose user name (Langfuse's public key) is <entity>/<project>`);
  if (!ProjectId.safeParse(user).success) {
    throw new ClientError(400, `the public key (Basic user name) must name the project as <entity>/<project>, got ${JSON.stringify(user.slice(0, 200))}`);
  }
  return user;
}

/**
 * OTLP/gRPC: the `project_id` metadata, else a Basic user name of the form `<entity>/<project>`
 * (a Collector may then send one `authorization` header alone); the usual user name (`api`)
 * names none, and the answer asks for `project_id`.
 */
export function grpcProject(headers: RequestHeaders): string {
  const user = headers[PROJECT_HEADER] === undefined ? basicUser(headers) : null;
  return user !== null && ProjectId.safeParse(user).success ? user : projectHeader(headers);
}

export const otlpTracesOp = operation({
  id: "otel_export_traces",
  method: "post",
  path: "/otel/v1/traces",
  summary: "OTLP/HTTP trace export: spans become calls (project named by the `project_id` header)",
  tag: "OpenTelemetry",
  response: ExportTraceServiceResponse,
  role: "writer",
  scope: { kind: "projects", of: (_input, headers) => [projectHeader(headers)] },
  rawBody: "application/x-protobuf or application/json (ExportTraceServiceRequest), optionally gzip or deflate",
  queued: true,
});

/** The path the Weave Python SDK's own OTel exporter posts to (the interface spec beside this repository, shared/spec/weave-python-sdk.md §6). */
export const otlpAgentsAliasOp = operation({ ...otlpTracesOp, id: "otel_export_traces_agents", path: "/agents/otel/v1/traces", alias: true });

/**
 * The path Langfuse's exporter posts to (`{LANGFUSE_BASE_URL}/api/public/otel/v1/traces`), with
 * `Authorization: Basic base64(<public key>:<secret key>)` and no other header we could read a
 * project from: so the public key names the project (`LANGFUSE_PUBLIC_KEY=<entity>/<project>`)
 * and the secret key is the API key (`LANGFUSE_SECRET_KEY=<key>`). A `project_id` header, when
 * sent, still wins. The same scope check as the other paths follows.
 */
export const otlpLangfuseOp = operation({
  ...otlpTracesOp,
  id: "otel_export_traces_langfuse",
  path: "/api/public/otel/v1/traces",
  summary: "OTLP/HTTP trace export at Langfuse's path: the project is the `project_id` header, else the Basic user name (Langfuse's public key)",
  role: "writer",
  scope: { kind: "projects", of: (_input, headers) => [langfuseProject(headers)] },
});

/**
 * OTLP/HTTP logs export. The records of a span (trace and span ids) are kept beside its call,
 * and a GenAI event among them (`gen_ai.*`) gives the call its inputs or output when the span
 * has none (query/callLogs.ts); records of no span are rejected in `partial_success`.
 */
export const otlpLogsOp = operation({
  id: "otel_export_logs",
  method: "post",
  path: "/otel/v1/logs",
  summary: "OTLP/HTTP logs export: a span's log records are kept with its call (project named by the `project_id` header)",
  tag: "OpenTelemetry",
  response: ExportLogsServiceResponse,
  role: "writer",
  scope: { kind: "projects", of: (_input, headers) => [projectHeader(headers)] },
  rawBody: "application/x-protobuf or application/json (ExportLogsServiceRequest), optionally gzip or deflate",
  queued: true,
});
