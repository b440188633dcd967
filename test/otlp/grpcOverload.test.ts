/**
 * The OTLP/gRPC server over a publisher that the test controls (no ClickHouse), as
 * httpOverload.test.ts for OTLP/HTTP: backpressure as RESOURCE_EXHAUSTED / UNAVAILABLE with a
 * google.rpc.RetryInfo in `grpc-status-details-bin` (what the OpenTelemetry exporters and the
 * Collector read) and gRPC's retry pushback, nothing published from a refused export; the
 * real JS gRPC exporters told so; a client with gRPC's retry policy retried after the delay;
 * success only once the publisher made the spans durable; the message size limit after gzip;
 * rejected spans in partial_success; and a stop that answers what it accepted.
 */
import { gzipSync } from "node:zlib";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyRing } from "../../services/auth/keys.js";
import { QueueFullError, RetryableError, StoreUnavailableError } from "../../services/errors.js";
import { startOtlpGrpc, type OtlpGrpcServer } from "../../services/ingest/otlp/grpc.js";
import { exportedCalls } from "../../services/otlp/exportEvent.js";
import { basic, KEY_ACME } from "../support/service.js";
import { NODE_24, runClient } from "./clientSupport.js";
import { errorDetails, exportClient, grpcHeaders, statusDetails } from "./grpcSupport.js";
import { decodeProtobufResponse, idMaker, protobufBody, ScriptedPublisher } from "./httpSupport.js";

const P = "acme/otel";
const MAX_MESSAGE = 64 * 1024;
const publisher = new ScriptedPublisher();
const id = idMaker("e");
const spec = () => ({ spans: [{ traceId: id.trace(), spanId: id.span(), name: "s", start: 1_000_000_000n, end: 2_000_000_000n }] });
let server: OtlpGrpcServer;
let url: string;

const start = () =>
  startOtlpGrpc({
    publisher,
    keys: new KeyRing([{ key: KEY_ACME, username: "alice", entities: ["acme"] }]),
    log: pino({ level: "silent" }),
    limits: { maxBodyBytes: MAX_MESSAGE, maxSpanBytes: 8 * 1024 },
    host: "127.0.0.1",
    port: 0,
    shutdownGraceMs: 5_000,
  });

beforeAll(async () => {
  server = await start();
  url = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop());

async function exportOnce(body: Buffer, options: { gzip?: boolean; retrying?: boolean } = {}) {
  const client = exportClient(url, "traces", options);
  try {
    return await client.export(body, grpcHeaders(P));
  } finally {
    client.close();
  }
}

const refusing = (err: Error) => () => Promise.reject(err);

describe("backpressure", () => {
  it("RESOURCE_EXHAUSTED with RetryInfo when the queue is full, nothing published", async () => {
    publisher.script.push(refusing(new QueueFullError("ingest buffer full", 3)));
    const before = publisher.published.length;
    const answer = await exportOnce(protobufBody(spec()));
    expect(answer.ok).toBe(false);
    if (answer.ok) return;
    expect({ code: answer.error.code, details: answer.error.details }).toEqual({ code: 8, details: "ingest buffer full" });
    expect(errorDetails(answer.error)).toEqual({ code: 8, message: "ingest buffer full", retryDelaySeconds: 3 });
    expect(answer.error.metadata.get("grpc-retry-pushback-ms")).toEqual(["3000"]);
    expect(publisher.published.length).toBe(before);
  });

  it("UNAVAILABLE with RetryInfo when the spans could not be made durable, or the store is away", async () => {
    publisher.script.push(refusing(new RetryableError("Kafka did not acknowledge", 5)));
    const notDurable = await exportOnce(protobufBody(spec()));
    expect(notDurable.ok ? null : errorDetails(notDurable.error)).toEqual({ code: 14, message: "Kafka did not acknowledge", retryDelaySeconds: 5 });
    publisher.script.push(refusing(new StoreUnavailableError("ClickHouse unavailable: ECONNREFUSED")));
    const storeAway = await exportOnce(protobufBody(spec()));
    expect(storeAway.ok ? null : errorDetails(storeAway.error)).toEqual({ code: 14, message: "storage unavailable, retry later", retryDelaySeconds: 2 });
  });

  it("INTERNAL without the internals, and no RetryInfo, for anything else", async () => {
    publisher.script.push(refusing(new Error("secret internals")));
    const answer = await exportOnce(protobufBody(spec()));
    expect(answer.ok ? null : { code: answer.error.code, details: answer.error.details, status: errorDetails(answer.error) }).toEqual({ code: 13, details: "internal error", status: null });
  });

  it("tells the OpenTelemetry JS gRPC exporters RESOURCE_EXHAUSTED with RetryInfo, for traces and logs", async () => {
    const refusals = Array.from({ length: 20 }, () => refusing(new QueueFullError("ingest buffer full", 1)));
    publisher.script.push(...refusals);
    const before = publisher.published.length;
    const run = (await runClient(NODE_24, "otel-grpc.mjs", {
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=${encodeURIComponent(basic(KEY_ACME))},project_id=${P}`,
      OTEL_EXPORTER_OTLP_COMPRESSION: "gzip",
    })) as { traceResults: { code: number; grpcCode: number; statusDetails: string | null }[]; logResults: { code: number; grpcCode: number; statusDetails: string | null }[] };
    publisher.script.splice(0);
    const results = [...run.traceResults, ...run.logResults];
    expect(run.traceResults.length * run.logResults.length).toBeGreaterThan(0);
    for (const r of results) {
      expect({ code: r.code, grpcCode: r.grpcCode, status: statusDetails(r.statusDetails) }).toEqual({ code: 1, grpcCode: 8, status: { code: 8, message: "ingest buffer full", retryDelaySeconds: 1 } });
    }
    expect(publisher.published.length).toBe(before);
  });

  it("is retried after the delay by a client with gRPC's retry policy, and succeeds once", async () => {
    publisher.script.push(refusing(new QueueFullError("ingest buffer full", 1)));
    const before = publisher.published.length;
    const answer = await exportOnce(protobufBody(spec()), { retrying: true, gzip: true });
    expect(answer).toMatchObject({ ok: true, response: Buffer.alloc(0) });
    expect(answer.ms).toBeGreaterThanOrEqual(900);
    expect(publisher.published.length).toBe(before + 1);
    const [logged, ...more] = publisher.published.at(-1)!;
    expect(more).toEqual([]);
    expect(logged).toMatchObject({ kind: "otlp_export", project_id: P, wb_user_id: "alice", format: "protobuf", spans: 1 });
    if (logged?.kind !== "otlp_export") throw new Error("not an export");
    expect(exportedCalls(logged).map((call) => [call.kind, call.op_name])).toEqual([["call_complete", "s"]]);
  });

  it("answers only after the publisher resolved (durable)", async () => {
    let release!: () => void;
    publisher.script.push(() => new Promise<void>((resolve) => (release = resolve)));
    let answered = false;
    const pending = exportOnce(protobufBody(spec())).then((answer) => {
      answered = true;
      return answer;
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(answered).toBe(false);
    release();
    expect(await pending).toMatchObject({ ok: true });
  });
});

describe("limits and partial success", () => {
  const large = () => protobufBody({ spans: Array.from({ length: 20 }, (_, i) => ({ ...spec().spans[0]!, name: `big${i}`, attributes: { note: "x".repeat(4_000) } })) });

  it("refuses a message over OTLP_MAX_BODY_BYTES, and one that gzip hides, with RESOURCE_EXHAUSTED and no RetryInfo", async () => {
    const body = large();
    expect([body.length > MAX_MESSAGE, gzipSync(body).length < MAX_MESSAGE]).toEqual([true, true]);
    const before = publisher.published.length;
    for (const gzip of [false, true]) {
      const answer = await exportOnce(body, { gzip });
      expect(answer.ok ? null : { code: answer.error.code, retry: errorDetails(answer.error) }, `gzip ${gzip}`).toEqual({ code: 8, retry: null });
    }
    expect(publisher.published.length).toBe(before);
  });

  it("rejects invalid or oversized spans in partial_success, publishing the rest", async () => {
    const before = publisher.published.length;
    const good = spec().spans[0]!;
    const body = protobufBody({ spans: [good, { ...spec().spans[0]!, traceId: "0".repeat(32) }, { ...spec().spans[0]!, attributes: { note: "y".repeat(9_000) } }] });
    const answer = await exportOnce(body);
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(decodeProtobufResponse(answer.response)).toMatchObject({ rejected_spans: "2" });
    expect(publisher.published.length).toBe(before + 1);
    expect(publisher.published.at(-1)).toMatchObject([{ kind: "otlp_export", spans: 1, id: good.spanId }]);
  });
});

describe("stopping", () => {
  it("answers the export it accepted, then refuses new connections", async () => {
    const stopping = await start();
    const stoppingUrl = `http://127.0.0.1:${stopping.port}`;
    let release!: () => void;
    publisher.script.push(() => new Promise<void>((resolve) => (release = resolve)));
    const client = exportClient(stoppingUrl, "traces");
    const inFlight = client.export(protobufBody(spec()), grpcHeaders(P));
    await new Promise((r) => setTimeout(r, 150));
    const stopped = stopping.stop();
    await new Promise((r) => setTimeout(r, 50));
    release();
    expect(await inFlight).toMatchObject({ ok: true });
    await stopped;
    client.close();
    const after = exportClient(stoppingUrl, "traces");
    const refused = await after.export(protobufBody(spec()), grpcHeaders(P));
    after.close();
    expect(refused.ok ? 0 : refused.error.code).toBe(14);
  });
});
