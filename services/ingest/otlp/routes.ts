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
import { otlpAgentsAliasOp, otlpLangfuseOp, otlpLogsOp, otlpTracesOp } from "../../contract/otlp.js";
import { ClientError } from "../../errors.js";
import type { ErrorAnswer, HttpApi } from "../../http/app.js";
import type { TraceEvent } from "../../queue/events.js";
import type { EventPublisher } from "../../queue/queue.js";
import { readBody, requestEncoding, requestFormat } from "./body.js";
import { encodeExportResponse, encodeLogsExportResponse, encodeStatus, type OtlpFormat } from "../../otlp/decode.js";
import { exportLogs, exportTraces, otlpStatus, type OtlpLimits } from "./export.js";

export { LOGGED_EXPORT_MAX_BYTES, type OtlpLimits } from "./export.js";

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
