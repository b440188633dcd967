/**
 * The OTLP route over a publisher that the test controls (no ClickHouse): overload answers
 * (429 / 503 with Retry-After and a google.rpc.Status), success only once the publisher
 * made the spans durable, and the real exporter retrying after an overload.
 */
import type { Server } from "node:http";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { KeyRing } from "../../services/auth/keys.js";
import { QueueFullError, RetryableError } from "../../services/errors.js";
import { HttpApi } from "../../services/http/app.js";
import { LOGGED_EXPORT_MAX_BYTES, mountOtlpIngest } from "../../services/ingest/otlp/routes.js";
import { exportedCalls } from "../../services/otlp/exportEvent.js";
import { StoreUnavailableError } from "../../services/errors.js";
import { basic, KEY_ACME } from "../support/service.js";
import { decodeProtobufStatus, idMaker, JSON_TYPE, jsonBody, OTLP_PATH, postOtlp, PROTOBUF, protobufBody, RecordingExporter, ScriptedPublisher } from "./httpSupport.js";

const publisher = new ScriptedPublisher();
let server: Server;
let url: string;
const id = idMaker("f");
const spec = () => ({ spans: [{ traceId: id.trace(), spanId: id.span(), name: "s", start: 1_000_000_000n, end: 2_000_000_000n }] });

beforeAll(async () => {
  const keys = new KeyRing([{ key: KEY_ACME, username: "alice", entities: ["acme"] }]);
  const api = new HttpApi({ keys, log: pino({ level: "silent" }), maxBodyBytes: 1024 });
  mountOtlpIngest(api, publisher, { maxBodyBytes: 1 << 20, maxSpanBytes: 1 << 20 });
  server = await api.listen(0, "127.0.0.1");
  const address = server.address();
  url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((done) => server.close(() => done()));
});

describe("overload and durability", () => {
  it("429 with Retry-After and a Status body when the queue is full", async () => {
    publisher.script.push(() => Promise.reject(new QueueFullError("ingest buffer full", 3)));
    const res = await postOtlp(url, protobufBody(spec()));
    expect(res.status).toBe(429);
    expect(res.headers.get("retry-after")).toBe("3");
    expect(res.headers.get("content-type")).toBe(PROTOBUF);
    expect(decodeProtobufStatus(res.body)).toEqual({ code: 8, message: "ingest buffer full" });
  });

  it("503 with Retry-After when the spans could not be made durable (JSON)", async () => {
    publisher.script.push(() => Promise.reject(new RetryableError("Kafka did not acknowledge", 5)));
    const res = await postOtlp(url, jsonBody(spec()), { contentType: JSON_TYPE });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("5");
    expect(JSON.parse(res.body.toString())).toEqual({ code: 14, message: "Kafka did not acknowledge" });
  });

  it("503 when the store is unavailable, 500 without internals for anything else", async () => {
    publisher.script.push(() => Promise.reject(new StoreUnavailableError("ClickHouse unavailable: ECONNREFUSED")));
    const unavailable = await postOtlp(url, protobufBody(spec()));
    expect(unavailable.status).toBe(503);
    expect(unavailable.headers.get("retry-after")).toBe("2");
    expect(decodeProtobufStatus(unavailable.body)).toEqual({ code: 14, message: "storage unavailable, retry later" });
    publisher.script.push(() => Promise.reject(new Error("secret internals")));
    const broken = await postOtlp(url, protobufBody(spec()));
    expect(broken.status).toBe(500);
    expect(decodeProtobufStatus(broken.body)).toEqual({ code: 13, message: "internal error" });
  });

  it("answers only after the publisher resolved (durable)", async () => {
    let release!: () => void;
    publisher.script.push(() => new Promise<void>((resolve) => (release = resolve)));
    let answered = false;
    const pending = postOtlp(url, protobufBody(spec())).then((res) => {
      answered = true;
      return res;
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(answered).toBe(false);
    const before = publisher.published.length;
    release();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(publisher.published.length).toBe(before + 1);
  });

  it("does not publish anything for a request with no valid span", async () => {
    const before = publisher.published.length;
    const res = await postOtlp(url, protobufBody({ spans: [{ traceId: "0".repeat(32), spanId: id.span(), name: "bad", start: 1n, end: 2n }] }));
    expect(res.status).toBe(200);
    expect(publisher.published.length).toBe(before);
  });

  it("publishes an export up to LOGGED_EXPORT_MAX_BYTES as one event, a larger one as one call event per span", async () => {
    const big = (count: number) => ({ spans: Array.from({ length: count }, (_, i) => ({ ...spec().spans[0]!, name: `big${i}`, attributes: { "input.value": "x".repeat(30_000) } })) });
    const small = protobufBody(big(10));
    const large = protobufBody(big(20));
    expect([small.length <= LOGGED_EXPORT_MAX_BYTES, large.length > LOGGED_EXPORT_MAX_BYTES]).toEqual([true, true]);
    const before = publisher.published.length;
    expect((await postOtlp(url, small)).status).toBe(200);
    expect((await postOtlp(url, large)).status).toBe(200);
    const [asExport, asCalls] = publisher.published.slice(before);
    expect(asExport!.map((e) => [e.kind, e.kind === "otlp_export" ? e.spans : null])).toEqual([["otlp_export", 10]]);
    expect(asCalls!.map((e) => [e.kind, e.kind === "call_complete" ? e.op_name : null])).toEqual(Array.from({ length: 20 }, (_, i) => ["call_complete", `big${i}`]));
  });

  it("publishes an OTLP/JSON export as the protobuf of its spans, one event while that is within LOGGED_EXPORT_MAX_BYTES", async () => {
    const attributes = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`app.attribute_${i}`, `value ${i}`]));
    const many = { spans: Array.from({ length: 1_000 }, (_, i) => ({ ...spec().spans[0]!, spanId: id.span(), name: `json${i}`, attributes })) };
    const json = jsonBody(many);
    expect([json.length > LOGGED_EXPORT_MAX_BYTES, protobufBody(many).length <= LOGGED_EXPORT_MAX_BYTES]).toEqual([true, true]);
    const before = publisher.published.length;
    const res = await postOtlp(url, json, { contentType: JSON_TYPE });
    expect([res.status, res.body.toString()]).toEqual([200, "{}"]);
    const [published, ...more] = publisher.published.slice(before);
    expect(more).toEqual([]);
    expect(published!.map((e) => [e.kind, e.kind === "otlp_export" ? [e.format, e.spans] : null])).toEqual([["otlp_export", ["protobuf", 1_000]]]);
    if (published![0]?.kind !== "otlp_export") throw new Error("not an export");
    expect(exportedCalls(published![0]).map((call) => call.op_name)).toEqual(many.spans.map((s) => s.name));
  });

  it("lets the real exporter retry after a 429, and succeed", async () => {
    publisher.script.push(() => Promise.reject(new QueueFullError("ingest buffer full", 1)));
    const before = publisher.published.length;
    const exporter = new RecordingExporter(
      new OTLPTraceExporter({ url: `${url}${OTLP_PATH}`, headers: { Authorization: basic(KEY_ACME), project_id: "acme/otel" }, compression: CompressionAlgorithm.GZIP, timeoutMillis: 10_000 }),
    );
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const started = Date.now();
    provider.getTracer("retry").startSpan("retried").end();
    await provider.forceFlush();
    await provider.shutdown();
    expect(exporter.results).toEqual([{ code: 0 }]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // waited for Retry-After: 1
    expect(publisher.published.length).toBe(before + 1);
    const [logged, ...more] = publisher.published.at(-1)!;
    expect(more).toEqual([]);
    expect(logged).toMatchObject({ kind: "otlp_export", project_id: "acme/otel", wb_user_id: "alice", format: "protobuf", spans: 1 });
    if (logged?.kind !== "otlp_export") throw new Error("not an export");
    expect(exportedCalls(logged).map((call) => [call.kind, call.op_name])).toEqual([["call_complete", "retried"]]);
  });
});
