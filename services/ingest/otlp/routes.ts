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
 * (otlp/logRecords.ts), answered with `ExportLogsServiceResponse`. After the body is read, the
 * export takes the path that OTLP/gRPC (grpc.ts) takes too: export.ts.
 */
import type { Request, Response } from "express";
import { ExportLogsServiceResponse, ExportTraceServiceResponse } from "../../contract/otlp.js";
import { ClientError } from "../../errors.js";
import type { ErrorAnswer, HttpApi } from "../../http/app.js";
import { operation } from "../../contract/operation.js";
import type { TraceEvent } from "../../queue/events.js";
import type { EventPublisher } from "../../queue/queue.js";
import { readBody, requestEncoding, requestFormat } from "./body.js";
import { encodeExportResponse, encodeLogsExportResponse, encodeStatus, type OtlpFormat } from "../../otlp/decode.js";
import { exportLogs, exportTraces, langfuseProject, otlpStatus, projectHeader, type OtlpLimits } from "./export.js";

export { LOGGED_EXPORT_MAX_BYTES, PROJECT_HEADER, type OtlpLimits } from "./export.js";

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

/** Errors are answered in the request's format when it names one, else in JSON. */
function answerFormat(req: Request): OtlpFormat {
  return requestFormat(req.headers["content-type"]) ?? "json";
}

function send(res: Response, format: OtlpFormat, body: Buffer | string): void {
  res.setHeader("Content-Type", CONTENT_TYPES[format]);
  res.end(body);
}

function renderStatus(answer: ErrorAnswer, err: unknown, req: Request, res: Response): void {
  const { code, message } = otlpStatus(answer, err);
  const format = answerFormat(req);
  send(res, format, encodeStatus(format, code, message));
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
      const partial = await exportLogs(publisher, ctx.projects[0]!, format, body);
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
      const partial = await exportTraces(publisher, source);
      res.status(200);
      send(res, format, encodeExportResponse(format, partial));
    },
    { renderError: renderStatus },
  );
}
