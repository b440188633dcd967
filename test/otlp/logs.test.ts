/**
 * `/otel/v1/logs` end to end: log records of spans are kept, and a span's GenAI events give its
 * call the inputs and output its attributes did not, whether they arrive before or after the
 * span; records of no span are rejected in partial_success; auth and the project header as
 * for traces. Read back through /call/read and /calls/stream_query.
 */
import { describe, expect, it } from "vitest";
import { ExportLogsServiceRequest, ExportLogsServiceResponse } from "../../services/otlp/protobuf.js";
import { untilRead } from "../support/polling.js";
import { KEY_OTHER, serviceForFile } from "../support/service.js";
import { decodeProtobufStatus, gzip, JSON_TYPE, jsonBody, postOtlp } from "./httpSupport.js";

const P = "acme/otel-logs";
const LOGS_PATH = "/otel/v1/logs";
const service = serviceForFile();
const api = service.api;

type Call = { id: string; op_name: string; inputs: unknown; output: unknown };
type Rec = { spanId?: string; traceId?: string; eventName?: string; body?: unknown; attributes?: Record<string, string>; time: bigint };

/** An AnyValue in OTLP/JSON for a plain JSON value. */
function jsonAny(value: unknown): unknown {
  if (typeof value === "string") return { stringValue: value };
  if (typeof value === "number") return Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value };
  if (typeof value === "boolean") return { boolValue: value };
  if (Array.isArray(value)) return { arrayValue: { values: value.map(jsonAny) } };
  if (value && typeof value === "object") return { kvlistValue: { values: Object.entries(value).map(([key, v]) => ({ key, value: jsonAny(v) })) } };
  return {};
}

const logsJson = (records: Rec[]) =>
  JSON.stringify({
    resourceLogs: [{
      resource: { attributes: [{ key: "service.name", value: { stringValue: "agent" } }] },
      scopeLogs: [{
        scope: { name: "genai-events" },
        logRecords: records.map((r) => ({
          timeUnixNano: String(r.time),
          ...(r.traceId ? { traceId: r.traceId } : {}),
          ...(r.spanId ? { spanId: r.spanId } : {}),
          ...(r.eventName ? { eventName: r.eventName } : {}),
          ...(r.body !== undefined ? { body: jsonAny(r.body) } : {}),
          attributes: Object.entries(r.attributes ?? {}).map(([key, v]) => ({ key, value: { stringValue: v } })),
        })),
      }],
    }],
  });

/** The same request in protobuf (bodies of strings, integers and objects of them, enough here). */
function logsProtobuf(records: Rec[]): Buffer {
  const pbAny = (value: unknown): object =>
    typeof value === "string" ? { string_value: value }
    : typeof value === "number" ? { int_value: value }
    : { kvlist_value: { values: Object.entries(value as Record<string, unknown>).map(([key, v]) => ({ key, value: pbAny(v) })) } };
  return Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject({
    resource_logs: [{
      scope_logs: [{
        scope: { name: "genai-events" },
        log_records: records.map((r) => ({
          time_unix_nano: String(r.time),
          ...(r.traceId ? { trace_id: Buffer.from(r.traceId, "hex") } : {}),
          ...(r.spanId ? { span_id: Buffer.from(r.spanId, "hex") } : {}),
          ...(r.eventName ? { event_name: r.eventName } : {}),
          ...(r.body !== undefined ? { body: pbAny(r.body) } : {}),
        })),
      }],
    }],
  })).finish());
}

const T = 1_767_225_600_000_000_000n;
const span = (traceId: string, spanId: string, attributes: Record<string, string> = {}) =>
  jsonBody({ spans: [{ traceId, spanId, name: "chat gpt-4o", start: T, end: T + 1_000_000n, attributes: { "gen_ai.operation.name": "chat", ...attributes } }] });

const events = (traceId: string, spanId: string): Rec[] => [
  { traceId, spanId, time: T + 1_000n, eventName: "gen_ai.system.message", body: { content: "Be brief." } },
  { traceId, spanId, time: T + 2_000n, eventName: "gen_ai.user.message", body: { content: "2+2?" } },
  { traceId, spanId, time: T + 3_000n, eventName: "gen_ai.choice", body: { index: 0, finish_reason: "stop", message: { content: "4" } } },
  { traceId, spanId, time: T + 4_000n, eventName: "app.note", body: "not a GenAI event" },
];

const FILLED = {
  inputs: { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "2+2?" }] },
  output: { choices: [{ index: 0, finish_reason: "stop", message: { content: "4" } }] },
};

async function postTraces(body: string) {
  const res = await postOtlp(service.url, body, { contentType: JSON_TYPE, project: P });
  expect(res.status).toBe(200);
}

async function postLogs(body: Buffer | string, options: { json?: boolean; gzip?: boolean } = {}) {
  const res = await postOtlp(service.url, options.gzip ? gzip(body) : body, {
    path: LOGS_PATH, project: P, contentType: options.json === false ? "application/x-protobuf" : JSON_TYPE, ...(options.gzip ? { encoding: "gzip" } : {}),
  });
  return res;
}

/** The call once it reads with `want` (the answer may come before storage with the durable log). */
async function readEventually(id: string, want: (c: Call | null) => boolean): Promise<Call | null> {
  return untilRead(async () => (await api.json<{ call: Call | null }>("/call/read", { project_id: P, id })).call, want, { timeoutMs: 20_000, everyMs: 100 });
}

const filled = (c: Call | null) => c !== null && JSON.stringify(c.output) !== "null" && JSON.stringify(c.inputs) !== "{}";

describe("/otel/v1/logs", () => {
  it("fills a span's inputs and output from its GenAI events that came after it (JSON)", async () => {
    const [traceId, spanId] = ["a1".repeat(16), "b1".repeat(8)];
    await postTraces(span(traceId, spanId));
    const res = await postLogs(logsJson(events(traceId, spanId)));
    expect({ status: res.status, body: res.body.toString() }).toEqual({ status: 200, body: "{}" });
    const call = await readEventually(spanId, filled);
    expect({ inputs: call!.inputs, output: call!.output }).toEqual(FILLED);
    const streamed = await api.lines<Call>("/calls/stream_query", { project_id: P, filter: { trace_ids: [traceId] } });
    expect(streamed.map((c) => ({ inputs: c.inputs, output: c.output }))).toEqual([FILLED]);
  });

  it("keeps every record of a span with its call: /call/log_records, oldest first", async () => {
    const [traceId, spanId] = ["a6".repeat(16), "b6".repeat(8)];
    const records: Rec[] = [...events(traceId, spanId), { traceId, spanId, time: T + 5_000n, body: "retrying", attributes: { attempt: "2" } }];
    expect((await postLogs(logsJson(records))).status).toBe(200);
    // Redelivered or sent again: each record is kept once.
    expect((await postLogs(logsJson(records))).status).toBe(200);
    const got = await untilRead(
      () => api.json<{ records: Record<string, unknown>[] }>("/call/log_records", { project_id: P, call_id: spanId }),
      (read) => read.records.length >= 5,
      { timeoutMs: 20_000, everyMs: 100 },
    );
    const at = (micros: number) => `2026-01-01T00:00:00.${String(micros).padStart(6, "0")}Z`;
    const common = { trace_id: traceId, severity_number: 0, severity_text: "", scope_name: "genai-events" };
    expect(got.records).toEqual([
      { ...common, time: at(1), event_name: "gen_ai.system.message", body: { content: "Be brief." }, attributes: {} },
      { ...common, time: at(2), event_name: "gen_ai.user.message", body: { content: "2+2?" }, attributes: {} },
      { ...common, time: at(3), event_name: "gen_ai.choice", body: { index: 0, finish_reason: "stop", message: { content: "4" } }, attributes: {} },
      { ...common, time: at(4), event_name: "app.note", body: "not a GenAI event", attributes: {} },
      { ...common, time: at(5), event_name: "", body: "retrying", attributes: { attempt: "2" } },
    ]);
    const other = await service.api.post("/call/log_records", { project_id: "other/x", call_id: spanId });
    expect(other.status).toBe(403);
  });

  it("fills them from events that came before the span (protobuf, gzip)", async () => {
    const [traceId, spanId] = ["a2".repeat(16), "b2".repeat(8)];
    const res = await postLogs(logsProtobuf(events(traceId, spanId)), { json: false, gzip: true });
    expect({ status: res.status, bytes: res.body.length }).toEqual({ status: 200, bytes: 0 });
    await postTraces(span(traceId, spanId));
    const call = await readEventually(spanId, filled);
    expect({ inputs: call!.inputs, output: call!.output }).toEqual(FILLED);
  });

  it("keeps a span's own inputs and output", async () => {
    const [traceId, spanId] = ["a3".repeat(16), "b3".repeat(8)];
    await postTraces(span(traceId, spanId, { "gen_ai.input.messages": '[{"role":"user","content":"own"}]', "gen_ai.output.messages": '[{"role":"assistant","content":"mine"}]' }));
    await postLogs(logsJson(events(traceId, spanId)));
    const call = await readEventually(spanId, (c) => c !== null);
    expect({ inputs: call!.inputs, output: call!.output }).toEqual({ inputs: { value: [{ role: "user", content: "own" }] }, output: [{ role: "assistant", content: "mine" }] });
  });

  it("rejects the records of no span in partial_success and keeps the others", async () => {
    const [traceId, spanId] = ["a4".repeat(16), "b4".repeat(8)];
    await postTraces(span(traceId, spanId));
    const records: Rec[] = [{ time: T, body: "a process log line" }, { traceId, spanId: "0".repeat(16), time: T, body: "zero span id" }, ...events(traceId, spanId)];
    const json = await postLogs(logsJson(records));
    expect({ status: json.status, body: JSON.parse(json.body.toString()) }).toEqual({
      status: 200,
      body: {
        partialSuccess: {
          rejectedLogRecords: "2",
          errorMessage: '2 log records rejected: log record 0 of scope "genai-events": no span (a valid trace id and span id): only the records of spans are kept; log record 1 of scope "genai-events": no span (a valid trace id and span id): only the records of spans are kept',
        },
      },
    });
    const pb = await postLogs(logsProtobuf(records), { json: false });
    const answer = ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(pb.body), { longs: Number }) as { partial_success?: { rejected_log_records: number } };
    expect(answer.partial_success?.rejected_log_records).toBe(2);
    const call = await readEventually(spanId, filled);
    expect({ inputs: call!.inputs, output: call!.output }).toEqual(FILLED);
  });

  it("answers 403 for another entity's project, 400 without the project header, 415 for another type, and keeps nothing", async () => {
    const [traceId, spanId] = ["a5".repeat(16), "b5".repeat(8)];
    const body = logsJson(events(traceId, spanId));
    const other = await postOtlp(service.url, body, { path: LOGS_PATH, project: P, contentType: JSON_TYPE, key: KEY_OTHER });
    expect({ status: other.status, body: JSON.parse(other.body.toString()) }).toMatchObject({ status: 403, body: { code: 7 } });
    const noProject = await postOtlp(service.url, logsProtobuf(events(traceId, spanId)), { path: LOGS_PATH, project: null });
    expect(noProject.status).toBe(400);
    expect(decodeProtobufStatus(noProject.body).message).toBe("the project_id header is required: project_id: <entity>/<project>");
    const text = await postOtlp(service.url, body, { path: LOGS_PATH, project: P, contentType: "text/plain" });
    expect(text.status).toBe(415);
    const bad = await postOtlp(service.url, '{"resourceLogs":[{"scopeLogs":{}}]}', { path: LOGS_PATH, project: P, contentType: JSON_TYPE });
    expect({ status: bad.status, body: JSON.parse(bad.body.toString()) }).toEqual({ status: 400, body: { code: 3, message: "resourceLogs[0].scopeLogs: expected an array" } });
    await postTraces(span(traceId, spanId));
    const call = await readEventually(spanId, (c) => c !== null);
    expect({ inputs: call!.inputs, output: call!.output }).toEqual({ inputs: {}, output: null });
  });
});
