/**
 * What an OTLP export goes through once its transport (OTLP/HTTP: routes.ts; OTLP/gRPC:
 * grpc.ts) has read the request, checked the key and named the project: one decode, one
 * check or mapping of the spans (or log records), one publish on the queue, and the
 * `partial_success` of what was rejected. Also shared by both doors: the gRPC status code of
 * each refusal. The project rules (the `project_id` header or metadata) are the operations'
 * own: contract/otlp.ts.
 */
import type { Config } from "../../config.js";
import type { ErrorAnswer } from "../../http/app.js";
import type { TraceEvent } from "../../queue/events.js";
import type { EventPublisher } from "../../queue/queue.js";
import { decodeLogsRequest, decodeRequest, type LogsPartialSuccess, type OtlpFormat, type PartialSuccess } from "../../otlp/decode.js";
import { logRecordEvents } from "../../otlp/logRecords.js";
import { checkExport, loggedExport, otlpExportEvent, type ExportSource } from "../../otlp/exportEvent.js";
import { mapSpans, type SpanRejections } from "../../otlp/mapSpan.js";

export interface OtlpLimits {
  /** Limit on the body after decompression (and on the bytes received). */
  readonly maxBodyBytes: number;
  /** Limit on one span's call parts, as JSON. */
  readonly maxSpanBytes: number;
}

export const otlpLimits = (config: Pick<Config, "OTLP_MAX_BODY_BYTES" | "OTLP_MAX_SPAN_BYTES">): OtlpLimits => ({
  maxBodyBytes: config.OTLP_MAX_BODY_BYTES,
  maxSpanBytes: config.OTLP_MAX_SPAN_BYTES,
});

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

/** A publish under way, and what was rejected: all that is kept while the log syncs. */
interface Publishing extends SpanRejections {
  readonly published: Promise<void>;
}

const publishEvents = (publisher: EventPublisher<TraceEvent>, events: readonly TraceEvent[], bodyBytes: number): Promise<void> =>
  events.length > 0 ? publisher.publish(events, bodyBytes) : Promise.resolve();

/**
 * Publishes the export's accepted spans (durable once `published` resolves). Not async: its
 * caller waits holding neither the decoded spans nor their events (an async function keeps
 * every local alive across its waits: http/app.ts, `handOver`).
 */
function publishSpans(publisher: EventPublisher<TraceEvent>, source: ExportSource): Publishing {
  const { logged, batch } = loggedExport(source);
  if (logged.body.length > LOGGED_EXPORT_MAX_BYTES) {
    const { events, rejected, errors } = mapSpans(batch ?? decodeRequest(logged.format, logged.body), logged);
    return { published: publishEvents(publisher, events, source.body.length), rejected, errors };
  }
  const checked = checkExport(logged, batch);
  const event = otlpExportEvent(logged, checked);
  return { published: publishEvents(publisher, event ? [event] : [], source.body.length), rejected: checked.rejected, errors: checked.errors };
}

/**
 * An `ExportTraceServiceRequest` (the body with its content encoding undone): decoded (a 400
 * OtlpDecodeError when it cannot be), its accepted spans published; resolves once they are
 * durable, with the partial success to answer when some were rejected. Nothing is published
 * from a request that fails to decode, nor when the publish is refused.
 */
export async function exportTraces(publisher: EventPublisher<TraceEvent>, source: ExportSource): Promise<PartialSuccess | undefined> {
  const { published, ...rejections } = publishSpans(publisher, source);
  await published;
  return partialSuccess(rejections);
}

/** The records of spans of an export, published for `projectId`; not async, as `publishSpans`. */
function publishLogRecords(publisher: EventPublisher<TraceEvent>, projectId: string, format: OtlpFormat, body: Buffer): Publishing {
  const { events, rejected, errors } = logRecordEvents(decodeLogsRequest(format, body), projectId, LOGGED_EXPORT_MAX_BYTES);
  return { published: publishEvents(publisher, events, body.length), rejected, errors };
}

/** An `ExportLogsServiceRequest`, as `exportTraces`. */
export async function exportLogs(publisher: EventPublisher<TraceEvent>, projectId: string, format: OtlpFormat, body: Buffer): Promise<LogsPartialSuccess | undefined> {
  const { published, rejected, errors } = publishLogRecords(publisher, projectId, format, body);
  await published;
  if (rejected === 0) return undefined;
  return { rejected_log_records: rejected, error_message: rejectionMessage(rejected, errors, "log records") };
}

/** gRPC status codes (grpc-js `status`), by the HTTP status the same refusal gets (http/app.ts `errorAnswer`). */
const GRPC_CODES: Readonly<Record<number, number>> = {
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

export interface OtlpStatus {
  /** The gRPC status code. */
  readonly code: number;
  readonly message: string;
  /** Seconds to wait before a retry, for the refusals a client retries (429, 503); else null. */
  readonly retryAfterSeconds: number | null;
}

/**
 * A refused export as OTLP tells it, over either transport: the gRPC code of the HTTP answer
 * `errorAnswer` chose for the error, its message (never the internals of a 5xx), and the
 * `Retry-After` of a refusal to retry.
 */
export function otlpStatus(answer: ErrorAnswer, err: unknown): OtlpStatus {
  const detail = (answer.body as { detail?: unknown } | null)?.detail;
  const message = typeof detail === "string" ? detail : answer.status < 500 && err instanceof Error ? err.message : "internal error";
  const retryAfter = Number(answer.headers?.["Retry-After"]);
  return { code: GRPC_CODES[answer.status] ?? GRPC_INTERNAL, message, retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : null };
}
