/**
 * The OTLP endpoint's answers for each protocol case, with hand-built protobuf and JSON
 * bodies against the real service: errors carry a `google.rpc.Status` in the request's
 * content type, partial successes count rejected spans while keeping the good ones, an
 * empty request succeeds, a re-sent export never duplicates a call, and the body limit
 * holds after decompression.
 */
import { deflateRawSync, deflateSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, KEY_OTHER, startTestService, type Client } from "../support/service.js";
import {
  decodeProtobufResponse,
  decodeProtobufStatus,
  idMaker,
  JSON_TYPE,
  jsonBody,
  postOtlp,
  PROTOBUF,
  protobufBody,
  storedRows,
  type RequestSpec,
  type SpanSpec,
} from "./httpSupport.js";

const P = "acme/otel";
const T = 1_767_225_600_000_000_000n; // 2026-01-01T00:00:00Z in ns
const ms = (n: number) => BigInt(n) * 1_000_000n;

let service: Awaited<ReturnType<typeof startTestService>>;
let api: Client;
const id = idMaker("e");

beforeAll(async () => {
  service = await startTestService();
  api = client(service.url);
});
afterAll(async () => service.stop());

function span(overrides: Partial<SpanSpec> = {}): SpanSpec {
  return { traceId: id.trace(), spanId: id.span(), name: "step", start: T, end: T + ms(5), ...overrides };
}

const oneSpan = (overrides: Partial<SpanSpec> = {}): RequestSpec => ({ spans: [span(overrides)] });
type Call = Record<string, unknown> & { id: string; parent_id: string | null };
const callsOfTrace = (traceId: string) => api.lines<Call>("/calls/stream_query", { project_id: P, filter: { trace_ids: [traceId] } });

function expectJsonStatus(res: { status: number; headers: Headers; body: Buffer }, status: number, code: number, message: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = JSON.parse(res.body.toString()) as { code: number; message: string; detail?: unknown };
  expect(body).toEqual({ code, message: expect.stringMatching(message) });
}

function expectProtobufStatus(res: { status: number; headers: Headers; body: Buffer }, status: number, code: number, message: RegExp) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toBe(PROTOBUF);
  expect(decodeProtobufStatus(res.body)).toEqual({ code, message: expect.stringMatching(message) });
}

describe("success", () => {
  it("accepts protobuf and answers an empty ExportTraceServiceResponse in protobuf", async () => {
    const spec = oneSpan();
    const res = await postOtlp(service.url, protobufBody(spec));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(PROTOBUF);
    expect(res.body.length).toBe(0);
    expect(await callsOfTrace(spec.spans[0]!.traceId)).toHaveLength(1);
  });

  it("takes the same exports at /agents/otel/v1/traces, the Weave Python SDK's path", async () => {
    const s = span({ name: "via-agents-path" });
    const res = await postOtlp(service.url, jsonBody({ spans: [s] }), { contentType: JSON_TYPE, path: "/agents/otel/v1/traces" });
    expect({ status: res.status, body: res.body.toString() }).toEqual({ status: 200, body: "{}" });
    const { call } = await api.json<{ call: { op_name: string } | null }>("/call/read", { project_id: P, id: s.spanId });
    expect(call?.op_name).toBe("via-agents-path");
    const other = await postOtlp(service.url, jsonBody({ spans: [span()] }), { contentType: JSON_TYPE, path: "/agents/otel/v1/traces", key: KEY_OTHER });
    expect(other.status).toBe(403);
  });

  it("accepts JSON (with a charset) and answers {} in JSON", async () => {
    const spec = oneSpan();
    const res = await postOtlp(service.url, jsonBody(spec), { contentType: "application/json; charset=utf-8" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expect(JSON.parse(res.body.toString())).toEqual({});
    expect(await callsOfTrace(spec.spans[0]!.traceId)).toHaveLength(1);
  });

  it.each([
    ["gzip", gzipSync],
    ["deflate (zlib)", deflateSync],
    ["deflate (raw)", deflateRawSync],
  ] as const)("accepts Content-Encoding %s", async (name, compress) => {
    const spec = oneSpan();
    const res = await postOtlp(service.url, compress(protobufBody(spec)), { encoding: name.split(" ")[0] });
    expect(res.status).toBe(200);
    expect(await callsOfTrace(spec.spans[0]!.traceId)).toHaveLength(1);
  });

  it("treats an empty request as a success, in both formats and encodings", async () => {
    for (const [body, contentType, encoding] of [
      [Buffer.alloc(0), PROTOBUF, undefined],
      [Buffer.alloc(0), JSON_TYPE, undefined],
      [Buffer.alloc(0), PROTOBUF, "gzip"],
      [gzipSync(Buffer.alloc(0)), PROTOBUF, "gzip"],
      ["{}", JSON_TYPE, undefined],
      ['{"resourceSpans":[]}', JSON_TYPE, undefined],
      ['{"resourceSpans":[{"scopeSpans":[{"spans":[]}]}]}', JSON_TYPE, undefined],
    ] as const) {
      const res = await postOtlp(service.url, body, { contentType, encoding });
      expect(res.status, `${contentType} ${encoding ?? ""} ${body.toString()}`).toBe(200);
      if (contentType === PROTOBUF) expect(res.body.length).toBe(0);
      else expect(JSON.parse(res.body.toString())).toEqual({});
    }
  });

  it("never duplicates a call when the same export is sent again (exporter retry)", async () => {
    const traceId = id.trace();
    const root = span({ traceId, name: "root", attributes: { "gen_ai.usage.input_tokens": 3, "gen_ai.request.model": "m" } });
    const spec: RequestSpec = { spans: [root, span({ traceId, parentSpanId: root.spanId, name: "child", start: T + ms(1), end: T + ms(2) })] };
    for (const body of [gzipSync(protobufBody(spec)), gzipSync(protobufBody(spec))]) {
      expect((await postOtlp(service.url, body, { encoding: "gzip" })).status).toBe(200);
    }
    expect((await postOtlp(service.url, jsonBody(spec), { contentType: JSON_TYPE })).status).toBe(200);
    const calls = await callsOfTrace(traceId);
    expect(calls.map((c) => [c.id, c.parent_id])).toEqual([[root.spanId, null], [spec.spans[1]!.spanId, root.spanId]]);
    expect(calls[0]).toMatchObject({ summary: { usage: { m: { input_tokens: 3 } } } });
    expect((await api.json<{ count: number }>("/calls/query_stats", { project_id: P, filter: { trace_ids: [traceId] } })).count).toBe(2);
  });
});

describe("partial success", () => {
  const badSpans = (traceId: string): SpanSpec[] => [
    span({ traceId: "0".repeat(32), name: "zero trace id" }),
    span({ traceId, spanId: "0".repeat(16), name: "zero span id" }),
    span({ traceId, name: "backwards", start: T + ms(10), end: T + ms(9) }),
  ];

  it("rejects bad spans one by one, keeps the good ones (protobuf)", async () => {
    const traceId = id.trace();
    const good = [span({ traceId, name: "good 1" }), span({ traceId, name: "good 2", start: T + ms(1) })];
    const res = await postOtlp(service.url, protobufBody({ spans: [good[0]!, ...badSpans(traceId), good[1]!] }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe(PROTOBUF);
    const partial = decodeProtobufResponse(res.body);
    expect(partial?.rejected_spans).toBe("3");
    expect(partial?.error_message).toMatch(/3 spans rejected/);
    expect(partial?.error_message).toMatch(/"zero trace id".*invalid trace id/);
    expect(partial?.error_message).toMatch(/"zero span id".*invalid span id/);
    expect(partial?.error_message).toMatch(/"backwards".*ends before it starts/);
    expect((await callsOfTrace(traceId)).map((c) => c.id)).toEqual(good.map((s) => s.spanId));
  });

  it("rejects bad spans one by one, keeps the good ones (JSON)", async () => {
    const traceId = id.trace();
    const good = span({ traceId, name: "good" });
    const res = await postOtlp(service.url, jsonBody({ spans: [...badSpans(traceId), good] }), { contentType: JSON_TYPE });
    expect(res.status).toBe(200);
    const body = JSON.parse(res.body.toString()) as { partialSuccess: { rejectedSpans: string; errorMessage: string } };
    expect(body.partialSuccess.rejectedSpans).toBe("3");
    expect(body.partialSuccess.errorMessage).toMatch(/ends before it starts/);
    expect((await callsOfTrace(traceId)).map((c) => c.id)).toEqual([good.spanId]);
  });

  it("answers a partial success with every span rejected without storing anything", async () => {
    const res = await postOtlp(service.url, jsonBody({ spans: badSpans(id.trace()) }), { contentType: JSON_TYPE });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toMatchObject({ partialSuccess: { rejectedSpans: "3" } });
  });
});

describe("errors", () => {
  const body = () => protobufBody(oneSpan());

  it("401 with WWW-Authenticate and a Status body when the key is missing or wrong", async () => {
    const missing = await postOtlp(service.url, body(), { key: null });
    expectProtobufStatus(missing, 401, 16, /missing or invalid API key/);
    expect(missing.headers.get("www-authenticate")).toMatch(/^Basic /);
    const wrong = await postOtlp(service.url, jsonBody(oneSpan()), { key: "not-a-key-0123456789abcdef", contentType: JSON_TYPE });
    expectJsonStatus(wrong, 401, 16, /missing or invalid API key/);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic /);
  });

  it("403 when the key may not reach the project", async () => {
    expectProtobufStatus(await postOtlp(service.url, body(), { key: KEY_OTHER }), 403, 7, /may not reach project acme\/otel/);
    expectJsonStatus(await postOtlp(service.url, jsonBody(oneSpan()), { key: KEY_OTHER, contentType: JSON_TYPE }), 403, 7, /may not reach/);
  });

  it("400 naming the project_id header when it is missing or malformed", async () => {
    expectProtobufStatus(await postOtlp(service.url, body(), { project: null }), 400, 3, /project_id header is required/);
    expectJsonStatus(await postOtlp(service.url, jsonBody(oneSpan()), { project: null, contentType: JSON_TYPE }), 400, 3, /project_id header is required/);
    expectJsonStatus(await postOtlp(service.url, "{}", { project: "no-slash", contentType: JSON_TYPE }), 400, 3, /project_id header must be <entity>\/<project>/);
  });

  it("400 with a google.rpc.Status for an undecodable body, in the request's format", async () => {
    expectProtobufStatus(await postOtlp(service.url, Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01])), 400, 3, /invalid protobuf/);
    expectProtobufStatus(await postOtlp(service.url, Buffer.from("this is not protobuf at all, really")), 400, 3, /invalid protobuf/);
    expectJsonStatus(await postOtlp(service.url, "{not json", { contentType: JSON_TYPE }), 400, 3, /invalid JSON/);
    expectJsonStatus(await postOtlp(service.url, '{"resourceSpans": 7}', { contentType: JSON_TYPE }), 400, 3, /resourceSpans/);
    expectJsonStatus(await postOtlp(service.url, gzipSync("{not json"), { contentType: JSON_TYPE, encoding: "gzip" }), 400, 3, /invalid JSON/);
  });

  it("400 for a corrupt compressed body", async () => {
    const gz = gzipSync(body());
    expectProtobufStatus(await postOtlp(service.url, gz.subarray(0, gz.length - 6), { encoding: "gzip" }), 400, 3, /invalid gzip body/);
    expectProtobufStatus(await postOtlp(service.url, Buffer.from("definitely not gzip"), { encoding: "gzip" }), 400, 3, /invalid gzip body/);
  });

  it("415 for a content type other than protobuf or JSON", async () => {
    for (const contentType of ["text/plain", "application/octet-stream", "application/protobuf", "application/json; charset=latin1", null]) {
      const res = await postOtlp(service.url, body(), { contentType });
      expectJsonStatus(res, 415, 12, /unsupported content type/);
    }
  });

  it("415 for an unknown content encoding, in the request's format", async () => {
    expectProtobufStatus(await postOtlp(service.url, body(), { encoding: "br" }), 415, 12, /unsupported content encoding "br"/);
    expectJsonStatus(await postOtlp(service.url, jsonBody(oneSpan()), { contentType: JSON_TYPE, encoding: "zstd" }), 415, 12, /zstd/);
  });

  it("never answers in the Weave detail shape", async () => {
    const res = await postOtlp(service.url, "{", { contentType: JSON_TYPE, key: null });
    expect(JSON.parse(res.body.toString())).not.toHaveProperty("detail");
  });

  it("is in the OpenAPI document with its response schema", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as {
      paths: Record<string, { post?: { responses: Record<string, { content: Record<string, { schema: unknown }> }> } }>;
      components: { schemas: Record<string, unknown> };
    };
    expect(doc.paths["/otel/v1/traces"]?.post?.responses["200"]?.content["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/ExportTraceServiceResponse" });
    expect(doc.components.schemas["ExportTraceServiceResponse"]).toMatchObject({ properties: { partialSuccess: expect.any(Object) } });
  });
});

describe("size limits (OTLP_MAX_BODY_BYTES = 64 KiB, OTLP_MAX_SPAN_BYTES = 16 KiB)", () => {
  let small: Awaited<ReturnType<typeof startTestService>>;
  beforeAll(async () => {
    small = await startTestService({ OTLP_MAX_BODY_BYTES: String(64 * 1024), OTLP_MAX_SPAN_BYTES: String(16 * 1024) });
  });
  afterAll(async () => small.stop());

  it("413 for a gzip bomb: small compressed, large once inflated", async () => {
    const bomb = gzipSync(protobufBody(oneSpan({ attributes: { "input.value": "a".repeat(40 * 1024 * 1024) } })), { level: 9 });
    expect(bomb.length).toBeLessThan(64 * 1024);
    const res = await postOtlp(small.url, bomb, { encoding: "gzip" });
    expectProtobufStatus(res, 413, 3, /size after decompression is over the limit of 65536 bytes/);
    const json = await postOtlp(small.url, gzipSync(jsonBody(oneSpan({ attributes: { "input.value": "b".repeat(10 * 1024 * 1024) } }))), { contentType: JSON_TYPE, encoding: "gzip" });
    expectJsonStatus(json, 413, 3, /after decompression/);
  });

  it("413 for a plain body over the limit, and the service still answers after it", async () => {
    const big = protobufBody(oneSpan({ attributes: { "input.value": "c".repeat(100 * 1024) } }));
    expectProtobufStatus(await postOtlp(small.url, big), 413, 3, /over the limit of 65536 bytes/);
    const spec = oneSpan();
    expect((await postOtlp(small.url, protobufBody(spec))).status).toBe(200);
  });

  it("rejects a span over the per-span limit and keeps the others", async () => {
    const traceId = id.trace();
    const fat = span({ traceId, name: "fat", attributes: { "input.value": "d".repeat(20 * 1024) } });
    const thin = span({ traceId, name: "thin" });
    const res = await postOtlp(small.url, gzipSync(protobufBody({ spans: [fat, thin] })), { encoding: "gzip" });
    expect(res.status).toBe(200);
    const partial = decodeProtobufResponse(res.body);
    expect(partial?.rejected_spans).toBe("1");
    expect(partial?.error_message).toMatch(/"fat".*over the limit of 16384/);
    const calls = await client(small.url).lines<Call>("/calls/stream_query", { project_id: P, filter: { trace_ids: [traceId] } });
    expect(calls.map((c) => c.id)).toEqual([thin.spanId]);
    const stored = await storedRows(small.database, P, [thin.spanId]);
    expect(stored.get(thin.spanId)?.otel_dump).toMatchObject({ name: "thin", span_id: thin.spanId });
  });
});
