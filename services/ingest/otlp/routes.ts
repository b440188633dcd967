/**
 * `POST /otel/v1/traces`: OTLP/HTTP trace export (protobuf or JSON, identity, gzip or
 * deflate). Spans become call parts on the same queue as the Weave calls API; the answer
 * is given only after the queue made them durable. An export of up to
 * `LOGGED_EXPORT_MAX_BYTES` goes on the queue as it is, one event (otlp/exportEvent.ts), and
 * the worker maps its spans; a larger one is mapped here, one event per span. Every answer,
 * errors included, is in the request's content type: `ExportTraceServiceResponse` on
 * success, `google.rpc.Status` otherwise (never the `detail` shape of the rest of the API).
 * The same export at the Weave Python SDK's path and at Langfuse's (its project in the Basic
 * user name); `POST /otel/v1/logs`: log records of spans, as `otlp_log_records` events
 * (otlp/logRecords.ts), answered with `ExportLogsServiceResponse`.
 */
import type { Request, Response } from "express";
import { ExportLogsServiceResponse, ExportTraceServiceResponse } from "../../contract/otlp.js";
import { ProjectId } from "../../contract/common.js";
import { ClientError } from "../../errors.js";
import { credentials } from "../../auth/basic.js";
import type { ErrorAnswer, HttpApi } from "../../http/app.js";
import { operation, type RequestHeaders } from "../../contract/operation.js";
import type { TraceEvent } from "../../queue/events.js";
import type { EventPublisher } from "../../queue/queue.js";
import { readBody, requestEncoding, requestFormat } from "./body.js";
import { decodeLogsRequest, decodeRequest, encodeExportResponse, encodeLogsExportResponse, encodeStatus, type OtlpFormat, type OtlpSpanBatch, type PartialSuccess } from "../../otlp/decode.js";
import { logRecordEvents } from "../../otlp/logRecords.js";
import { otlpExportEvent, type ExportSource } from "../../otlp/exportEvent.js";
import { checkSpans, mapSpans, type SpanRejections } from "../../otlp/mapSpan.js";

export interface OtlpLimits {
  /** Limit on the body after decompression (and on the bytes received). */
  readonly maxBodyBytes: number;
  /** Limit on one span's call parts, as JSON. */
  readonly maxSpanBytes: number;
}

export const PROJECT_HEADER = "project_id";

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

const CONTENT_TYPES: Record<OtlpFormat, string> = { protobuf: "application/x-protobuf", json: "application/json" };

/** gRPC status codes for the `code` of a `google.rpc.Status` body, by HTTP status. */
const GRPC_CODES: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  413: 3, // INVALID_ARGUMENT: too large, do not retry
  415: 12, // UNIMPLEMENTED
  429: 8, // RESOURCE_EXHAUSTED
  503: 14, // UNAVAILABLE
};
const GRPC_INTERNAL = 13;

/**
 * The largest body logged as one event: base64 makes it 4/3 as large, and Kafka brokers
 * refuse messages over 1 MB by default (`message.max.bytes`).
 */
export const LOGGED_EXPORT_MAX_BYTES = 512 * 1024;

/** A partial success's message: how many were rejected, the listed reasons, and how many more. */
function rejectionMessage(rejected: number, errors: readonly string[], what: string): string {
  const more = rejected - errors.length;
  return `${rejected} ${what} rejected: ${errors.join("; ")}${more > 0 ? `; and ${more} more` : ""}`;
}

function partialSuccess(mapped: SpanRejections): PartialSuccess | undefined {
  if (mapped.rejected === 0) return undefined;
  return { rejected_spans: mapped.rejected, error_message: rejectionMessage(mapped.rejected, mapped.errors, "spans") };
}

/** Errors are answered in the request's format when it names one, else in JSON. */
function answerFormat(req: Request): OtlpFormat {
  return requestFormat(req.headers["content-type"]) ?? "json";
}

function send(res: Response, format: OtlpFormat, body: Buffer | string): void {
  res.setHeader("Content-Type", CONTENT_TYPES[format]);
  res.end(body);
}

function renderStatus(answer: ErrorAnswer, err: unknown, req: Request, res: Response): void {
  const detail = (answer.body as { detail?: unknown } | null)?.detail;
  const message = typeof detail === "string" ? detail : answer.status < 500 && err instanceof Error ? err.message : "internal error";
  const format = answerFormat(req);
  send(res, format, encodeStatus(format, GRPC_CODES[answer.status] ?? GRPC_INTERNAL, message));
}

function projectHeader(headers: RequestHeaders): string {
  const raw = headers[PROJECT_HEADER];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!value) throw new ClientError(400, `the ${PROJECT_HEADER} header is required: ${PROJECT_HEADER}: <entity>/<project>`);
  if (!ProjectId.safeParse(value).success) throw new ClientError(400, `the ${PROJECT_HEADER} header must be <entity>/<project>, got ${JSON.stringify(value.slice(0, 200))}`);
  return value;
}

function langfuseProject(headers: RequestHeaders): string {
  if (headers[PROJECT_HEADER] !== undefined) return projectHeader(headers);
  const raw = headers["authorization"];
  const user = credentials(Array.isArray(raw) ? raw[0] : raw)?.user;
  if (!user) throw new ClientError(400, `name the project: the ${PROJECT_HEADER} header, or Basic credentials whose user name (Langfuse's public key) is <entity>/<project>`);
  if (!ProjectId.safeParse(user).success) {
    throw new ClientError(400, `the public key (Basic user name) must name the project as <entity>/<project>, got ${JSON.stringify(user.slice(0, 200))}`);
  }
  return user;
}

/** Publishes the export's accepted spans (durable once it resolves); what was rejected is answered. */
async function publishExport(publisher: EventPublisher<TraceEvent>, source: ExportSource, batch: OtlpSpanBatch): Promise<SpanRejections> {
  if (source.body.length > LOGGED_EXPORT_MAX_BYTES) {
    const mapped = mapSpans(batch, source);
    if (mapped.events.length > 0) await publisher.publish(mapped.events, source.body.length);
    return mapped;
  }
  const checked = checkSpans(batch, source.maxSpanBytes);
  const event = otlpExportEvent(source, checked);
  if (event) await publisher.publish([event], source.body.length);
  return checked;
}

export function mountOtlpIngest(api: HttpApi, publisher: EventPublisher<TraceEvent>, limits: OtlpLimits): void {
  for (const op of [otlpTracesOp, otlpAgentsAliasOp, otlpLangfuseOp]) mountExport(api, op, publisher, limits);
  mountLogsExport(api, publisher, limits);
}

/** The body's format and encoding, or the 415 that names what is supported. */
function bodyFormat(req: Request): { format: OtlpFormat; encoding: NonNullable<ReturnType<typeof requestEncoding>> } {
  const format = requestFormat(req.headers["content-type"]);
  if (!format) {
    throw new ClientError(415, `unsupported content type ${JSON.stringify(req.headers["content-type"] ?? "")}: send application/x-protobuf or application/json`);
  }
  const encoding = requestEncoding(req.headers["content-encoding"]);
  if (!encoding) {
    throw new ClientError(415, `unsupported content encoding ${JSON.stringify(req.headers["content-encoding"])}: send gzip, deflate or identity`);
  }
  return { format, encoding };
}

function mountLogsExport(api: HttpApi, publisher: EventPublisher<TraceEvent>, limits: OtlpLimits): void {
  api.mount(
    otlpLogsOp,
    async (_input, ctx) => {
      const { req, res } = ctx;
      const { format, encoding } = bodyFormat(req);
      const body = await readBody(req, encoding, limits.maxBodyBytes);
      const mapped = logRecordEvents(decodeLogsRequest(format, body), ctx.projects[0]!, LOGGED_EXPORT_MAX_BYTES);
      if (mapped.events.length > 0) await publisher.publish(mapped.events, body.length);
      const partial = mapped.rejected === 0 ? undefined : { rejected_log_records: mapped.rejected, error_message: rejectionMessage(mapped.rejected, mapped.errors, "log records") };
      res.status(200);
      send(res, format, encodeLogsExportResponse(format, partial));
    },
    { renderError: renderStatus },
  );
}

function mountExport(api: HttpApi, op: typeof otlpTracesOp, publisher: EventPublisher<TraceEvent>, limits: OtlpLimits): void {
  api.mount(
    op,
    async (_input, ctx) => {
      const { req, res } = ctx;
      const projectId = ctx.projects[0]!;
      const { format, encoding } = bodyFormat(req);
      const body = await readBody(req, encoding, limits.maxBodyBytes);
      const source = { project_id: projectId, wb_user_id: ctx.principal.username, format, body, maxSpanBytes: limits.maxSpanBytes };
      const rejections = await publishExport(publisher, source, decodeRequest(format, body));
      res.status(200);
      send(res, format, encodeExportResponse(format, partialSuccess(rejections)));
    },
    { renderError: renderStatus },
  );
}
