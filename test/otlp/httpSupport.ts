/**
 * Helpers for the OTLP/HTTP endpoint tests: hand-built request bodies (protobuf through the
 * vendored schema, OTLP/JSON by hand), posting them, decoding the answers, and reading
 * stored rows straight from ClickHouse (for `otel_dump`, which queries do not return).
 */
import { gzipSync } from "node:zlib";
import { expect } from "vitest";
import type { Attributes } from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ExportTraceServiceRequest, ExportTraceServiceResponse, RpcStatus } from "../../services/otlp/protobuf.js";
import type { TraceEvent } from "../../services/queue/events.js";
import type { EventPublisher } from "../../services/queue/queue.js";
import { fullOtelDump } from "../../services/otlp/otelDump.js";
import type { JsonObject } from "../../services/json.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { StoredAttributes } from "../../services/store/calls/storedAttributes.js";
import { storeOn } from "../support/database.js";
import { basic, KEY_ACME } from "../support/service.js";

export const OTLP_PATH = "/otel/v1/traces";
export const PROTOBUF = "application/x-protobuf";
export const JSON_TYPE = "application/json";

export type AttrValue = string | number | boolean | string[];

/** A span in a simple form that both body builders take. Times are nanoseconds. */
export interface SpanSpec {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  start: bigint;
  end: bigint;
  attributes?: Record<string, AttrValue>;
  status?: { code: number; message?: string };
  kind?: number;
}

export interface RequestSpec {
  resource?: Record<string, AttrValue>;
  scope?: { name: string; version?: string };
  spans: SpanSpec[];
}

function pbValue(value: AttrValue): object {
  if (Array.isArray(value)) return { array_value: { values: value.map(pbValue) } };
  if (typeof value === "string") return { string_value: value };
  if (typeof value === "boolean") return { bool_value: value };
  return Number.isInteger(value) ? { int_value: value } : { double_value: value };
}

const pbAttributes = (attrs: Record<string, AttrValue> = {}) => Object.entries(attrs).map(([key, value]) => ({ key, value: pbValue(value) }));

/** An `ExportTraceServiceRequest` in protobuf. */
export function protobufBody(spec: RequestSpec): Buffer {
  const message = ExportTraceServiceRequest.fromObject({
    resource_spans: [
      {
        resource: { attributes: pbAttributes(spec.resource ?? { "service.name": "hand-built" }) },
        scope_spans: [
          {
            scope: { name: spec.scope?.name ?? "test.scope", version: spec.scope?.version ?? "1.0.0" },
            spans: spec.spans.map((s) => ({
              trace_id: Buffer.from(s.traceId, "hex"),
              span_id: Buffer.from(s.spanId, "hex"),
              parent_span_id: Buffer.from(s.parentSpanId ?? "", "hex"),
              name: s.name,
              kind: s.kind ?? 1,
              start_time_unix_nano: s.start.toString(),
              end_time_unix_nano: s.end.toString(),
              attributes: pbAttributes(s.attributes),
              status: s.status ?? {},
            })),
          },
        ],
      },
    ],
  });
  const bytes = ExportTraceServiceRequest.encode(message).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function jsonValue(value: AttrValue): object {
  if (Array.isArray(value)) return { arrayValue: { values: value.map(jsonValue) } };
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
}

const jsonAttributes = (attrs: Record<string, AttrValue> = {}) => Object.entries(attrs).map(([key, value]) => ({ key, value: jsonValue(value) }));

/** An `ExportTraceServiceRequest` in OTLP/JSON. */
export function jsonBody(spec: RequestSpec): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: jsonAttributes(spec.resource ?? { "service.name": "hand-built" }) },
        scopeSpans: [
          {
            scope: { name: spec.scope?.name ?? "test.scope", version: spec.scope?.version ?? "1.0.0" },
            spans: spec.spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? "",
              name: s.name,
              kind: s.kind ?? 1,
              startTimeUnixNano: s.start.toString(),
              endTimeUnixNano: s.end.toString(),
              attributes: jsonAttributes(s.attributes),
              status: s.status ?? {},
            })),
          },
        ],
      },
    ],
  });
}

export interface PostOptions {
  contentType?: string | null;
  encoding?: string;
  key?: string | null;
  project?: string | null;
  headers?: Record<string, string>;
  /** Another path of the same endpoint (the Weave SDK's `/agents/otel/v1/traces`). */
  path?: string;
}

/** POSTs a body to the OTLP endpoint; headers default to the acme key and project acme/otel. */
export async function postOtlp(baseUrl: string, body: Buffer | string, options: PostOptions = {}): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const headers: Record<string, string> = { ...options.headers };
  const contentType = options.contentType === undefined ? PROTOBUF : options.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  const key = options.key === undefined ? KEY_ACME : options.key;
  if (key !== null) headers["authorization"] = basic(key);
  const project = options.project === undefined ? "acme/otel" : options.project;
  if (project !== null) headers["project_id"] = project;
  if (options.encoding) headers["content-encoding"] = options.encoding;
  const res = await fetch(`${baseUrl}${options.path ?? OTLP_PATH}`, { method: "POST", headers, body: typeof body === "string" ? body : new Uint8Array(body) });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

export const gzip = (body: Buffer | string) => gzipSync(body);

export function decodeProtobufStatus(body: Buffer): { code: number; message: string } {
  const decoded = RpcStatus.toObject(RpcStatus.decode(body), { defaults: true }) as { code: number; message: string };
  return { code: decoded.code, message: decoded.message };
}

export function decodeProtobufResponse(body: Buffer): { rejected_spans?: string; error_message?: string } | null {
  const decoded = ExportTraceServiceResponse.toObject(ExportTraceServiceResponse.decode(body), { longs: String }) as {
    partial_success?: { rejected_spans?: string; error_message?: string };
  };
  return decoded.partial_success ?? null;
}

/**
 * The stored row columns that the query API does not return; `otel_dump` as received (the
 * attributes it leaves to the call put back, otelDump.ts), `stored_dump` as stored.
 */
export async function storedRows(
  database: string,
  projectId: string,
  ids: string[],
): Promise<Map<string, { otel_dump: unknown; stored_dump: unknown; storage_size_bytes: number }>> {
  const store = await storeOn(database);
  try {
    const pb = new ParamBuilder();
    type Row = { id: string; trace_id: string; parent_id: string | null; op_name: string; started_at: string; ended_at: string | null; otel_dump: string | null; attributes: string; inputs: string; output: string | null; storage_size_bytes: string; resource_hash?: string };
    const stored = await store.rows<Row>("test_otel_dump", {
      sql: `SELECT id, trace_id, parent_id, op_name, started_at, ended_at, otel_dump, attributes, inputs, output, storage_size_bytes, resource_hash FROM calls FINAL WHERE project_id = ${pb.str(projectId)} AND id IN ${pb.inStrings(ids)}`,
      params: pb.params,
    });
    // A span's resource and scope, and the inputs and output its attributes repeat, are stored once (store/calls/spanResources.ts, ioCopies.ts): put back as every read does.
    const rows = await new StoredAttributes(store).complete(projectId, stored);
    const dump = (r: Row) =>
      r.otel_dump === null
        ? null
        : fullOtelDump(JSON.parse(r.otel_dump) as JsonObject, {
            ...r,
            started_at: Number(r.started_at),
            ended_at: r.ended_at === null ? null : Number(r.ended_at),
            attributes: JSON.parse(r.attributes) as JsonObject,
          });
    return new Map(
      rows.map((r) => [
        r.id,
        { otel_dump: dump(r), stored_dump: r.otel_dump === null ? null : JSON.parse(r.otel_dump), storage_size_bytes: Number(r.storage_size_bytes) },
      ]),
    );
  } finally {
    await store.close();
  }
}

/** `ExportResult` of @opentelemetry/core (not a direct dependency): `{code: 0 success | 1 failed, error?}`. */
export type ExportResult = Parameters<Parameters<SpanExporter["export"]>[1]>[0];

/** Wraps a real exporter and records each export's result, so a test can see that it succeeded. */
export class RecordingExporter implements SpanExporter {
  readonly results: ExportResult[] = [];
  constructor(private readonly inner: SpanExporter) {}
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      this.results.push(result);
      done(result);
    });
  }
  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }
  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/**
 * Exports one span per entry through the OpenTelemetry JS SDK's protobuf exporter, from a
 * provider with `resource` and a tracer of `scope`, into `projectId` of the service at
 * `serviceUrl`: a second apart from 2026-01-01, each half a second long. Checks that every
 * export succeeded; answers the span ids, in order.
 */
export async function exportSdkSpans(
  serviceUrl: string,
  projectId: string,
  resource: Attributes,
  scope: { readonly name: string; readonly version: string },
  spans: readonly { readonly name: string; readonly attributes: Attributes }[],
): Promise<string[]> {
  const exporter = new RecordingExporter(new OTLPTraceExporter({ url: `${serviceUrl}${OTLP_PATH}`, headers: { Authorization: basic(KEY_ACME), project_id: projectId } }));
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes(resource), spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer(scope.name, scope.version);
  const ids = spans.map(({ name, attributes }, i) => {
    const span = tracer.startSpan(name, { startTime: [1_767_225_600 + i, 0], attributes });
    span.end([1_767_225_600 + i, 500_000_000]);
    return span.spanContext().spanId;
  });
  await provider.forceFlush();
  await provider.shutdown();
  for (const r of exporter.results) expect({ code: r.code, error: r.error?.message }).toEqual({ code: 0, error: undefined });
  return ids;
}

/** Hex ids unique within a test file: a hex prefix, then a counter. */
export function idMaker(prefix: string) {
  let n = 0;
  const next = (width: number) => prefix + (++n).toString(16).padStart(width - prefix.length, "0");
  return { trace: () => next(32), span: () => next(16) };
}

/** A publisher the test controls: each publish takes the next scripted outcome (then succeeds); published batches are kept. */
export class ScriptedPublisher implements EventPublisher<TraceEvent> {
  readonly published: TraceEvent[][] = [];
  readonly script: (() => Promise<void>)[] = [];
  async publish(events: readonly TraceEvent[]): Promise<void> {
    const next = this.script.shift();
    if (next) await next();
    this.published.push([...events]);
  }
  async healthy() {
    return true;
  }
  async close() {}
}
