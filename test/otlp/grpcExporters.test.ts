/**
 * OTLP over gRPC (`OTLP_GRPC_PORT`) end to end with the OpenTelemetry JS SDK's own gRPC
 * exporters, unmodified, run as programs of their own under Node 24 (test/clients/otel-grpc.mjs:
 * @opentelemetry/exporter-trace-otlp-grpc and exporter-logs-otlp-grpc configured by the
 * standard OTEL_EXPORTER_OTLP_* variables; test/clients/otel-logs.mjs: the Node SDK switched to
 * gRPC by OTEL_EXPORTER_OTLP_PROTOCOL=grpc), with and without gzip; read back through the API
 * as the OTLP/HTTP tests read theirs. Then the refusals as gRPC codes (the key, the project, a
 * message that is not OTLP), nothing stored from them.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { untilRead } from "../support/polling.js";
import { basic, KEY_ACME, KEY_OTHER, serviceForFile, startTestService, waitStored } from "../support/service.js";
import { NODE_24, runClient, storedCalls, type ClientCall } from "./clientSupport.js";
import { errorDetails, exportClient, grpcHeaders } from "./grpcSupport.js";
import { protobufBody } from "./httpSupport.js";
import { ExportLogsServiceRequest, ExportLogsServiceResponse } from "../../services/otlp/protobuf.js";

const service = serviceForFile();
const api = service.api;

type Turn = { agent: string; chats: string[]; tool?: string; trace: string };
type Result = { code: number; grpcCode?: number; message?: string; statusDetails?: string | null };
type Run = { turns: Turn[]; traceResults: Result[]; logResults: Result[] };
type Call = ClientCall & { started_at: string };

/** The standard exporter variables for our OTLP/gRPC endpoint. */
function grpcEnv(project: string | null, options: { key?: string; compression?: "gzip" | "none"; conversation?: string } = {}): Record<string, string> {
  const headers = [`authorization=${encodeURIComponent(basic(options.key ?? KEY_ACME))}`, ...(project === null ? [] : [`project_id=${project}`])];
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: service.otlpGrpcUrl!,
    OTEL_EXPORTER_OTLP_HEADERS: headers.join(","),
    OTEL_EXPORTER_OTLP_COMPRESSION: options.compression ?? "gzip",
    CONVERSATION: options.conversation ?? "conv-grpc",
  };
}

const runAgent = (env: Record<string, string>) => runClient(NODE_24, "otel-grpc.mjs", env) as Promise<Run>;

/** The call once `want` holds for it (its log records may be stored after its span). */
async function readEventually(project: string, id: string, want: (c: Call | null) => boolean): Promise<Call | null> {
  return untilRead(async () => (await api.json<{ call: Call | null }>("/call/read", { project_id: project, id })).call, want, { timeoutMs: 20_000, everyMs: 100 });
}

describe.each(["gzip", "none"] as const)("exporter-trace-otlp-grpc and exporter-logs-otlp-grpc, compression %s", (compression) => {
  const P = `acme/otel-grpc-${compression}`;
  const conversation = `conv-grpc-${compression}`;
  let run: Run;
  let calls: Call[] = [];

  beforeAll(async () => {
    run = await runAgent(grpcEnv(P, { compression, conversation }));
    calls = await storedCalls<Call>(api, P, 6);
  });

  it("succeeds on every export, traces and logs", () => {
    expect(run.traceResults.length).toBeGreaterThan(0);
    expect(run.logResults.length).toBeGreaterThan(0);
    expect([...run.traceResults, ...run.logResults]).toEqual([...run.traceResults, ...run.logResults].map(() => ({ code: 0 })));
  });

  it("stores each span as a call, in its tree", () => {
    const [first, second] = run.turns as [Turn, Turn];
    const parentOf = Object.fromEntries(calls.map((c) => [c.id, c.parent_id]));
    expect(parentOf).toEqual({
      [first.agent]: null,
      [first.chats[0]!]: first.agent,
      [first.tool!]: first.agent,
      [first.chats[1]!]: first.agent,
      [second.agent]: null,
      [second.chats[0]!]: second.agent,
    });
    const agent = calls.find((c) => c.id === first.agent)!;
    expect(agent).toMatchObject({ op_name: "invoke_agent planner", trace_id: first.trace, inputs: { value: [{ role: "user", content: "Trip to Lyon?" }] }, output: [{ role: "assistant", content: "Take TGV 6601." }] });
    expect(agent.attributes).toMatchObject({ agent: "planner", operation: "invoke_agent", otel: { resource: { service: { name: "travel-agent" } }, scope: { name: "agent.framework", version: "0.9.0" } } });
    expect(calls.find((c) => c.id === first.tool)).toMatchObject({ op_name: "execute_tool search_trains", inputs: { to: "Lyon" }, output: { trains: ["TGV 6601"] } });
  });

  it("counts the usage once: the model calls', not the agent span's copy", async () => {
    const [first] = run.turns as [Turn];
    const once = { "gpt-4o-mini": { requests: 0, prompt_tokens: 320, completion_tokens: 110, total_tokens: 430 } };
    const byTrace = await api.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: P, filter: { trace_ids: [first.trace] } });
    expect(byTrace.call_usage[first.agent]).toEqual(once);
    const started = Date.parse(calls[0]!.started_at);
    const stats = await api.json<{ usage_buckets: Record<string, unknown>[] }>("/calls/stats", {
      project_id: P, start: new Date(started - 3_600_000).toISOString(), end: new Date(started + 3_600_000).toISOString(), granularity: 7200,
      usage_metrics: [{ metric: "input_tokens" }, { metric: "output_tokens" }, { metric: "total_tokens", aggregations: ["sum", "count"] }],
      call_metrics: [],
    });
    const sums = [0, 0, 0];
    for (const b of stats.usage_buckets) [b["sum_input_tokens"], b["sum_output_tokens"], b["count_total_tokens"]].forEach((v, i) => (sums[i]! += Number(v)));
    expect(sums).toEqual([370, 119, 3]);
  });

  it("keeps the conversation as a thread of its two turns", async () => {
    const threads = await api.lines<{ thread_id: string; turn_count: number }>("/threads/stream_query", { project_id: P });
    expect(threads.map((t) => [t.thread_id, t.turn_count])).toEqual([[conversation, 2]]);
    expect(calls.filter((c) => c.parent_id === null).map((c) => [c.thread_id, c.turn_id])).toEqual(run.turns.map((t) => [conversation, t.agent]));
  });

  it("keeps the log records with their model call, which shows them as its prompt and answer", async () => {
    const [first] = run.turns as [Turn];
    const chat = first.chats[1]!;
    const call = await readEventually(P, chat, (c) => c !== null && c.output !== null);
    expect({ inputs: call!.inputs, output: call!.output }).toEqual({
      inputs: { messages: [{ role: "user", content: "Trip to Lyon?" }] },
      output: { choices: [{ index: 0, finish_reason: "stop", message: { content: "Take TGV 6601." } }] },
    });
    const { records } = await api.json<{ records: { event_name: string; trace_id: string; scope_name: string }[] }>("/call/log_records", { project_id: P, call_id: chat });
    expect(records.map((r) => [r.event_name, r.trace_id, r.scope_name])).toEqual([
      ["gen_ai.user.message", first.trace, "agent.framework"],
      ["gen_ai.choice", first.trace, "agent.framework"],
    ]);
  });
});

describe("the OpenTelemetry Node SDK switched to gRPC by OTEL_EXPORTER_OTLP_PROTOCOL=grpc", () => {
  const P = "acme/otel-grpc-sdk";

  it("exports the span and its log records to OTLP_GRPC_PORT", async () => {
    const ids = (await runClient(NODE_24, "otel-logs.mjs", {
      OTEL_SERVICE_NAME: "chat-app",
      OTEL_EXPORTER_OTLP_PROTOCOL: "grpc",
      OTEL_EXPORTER_OTLP_ENDPOINT: service.otlpGrpcUrl!,
      OTEL_EXPORTER_OTLP_HEADERS: `authorization=${encodeURIComponent(basic(KEY_ACME))},project_id=${P}`,
      OTEL_LOGS_EXPORTER: "otlp",
      OTEL_METRICS_EXPORTER: "none",
    })) as { traceId: string; spanId: string };
    const call = await readEventually(P, ids.spanId, (c) => c !== null && c.output !== null);
    expect(call).toMatchObject({
      op_name: "chat gpt-4o",
      inputs: { messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "2+2?" }] },
      output: { choices: [{ index: 0, finish_reason: "stop", message: { content: "4" } }] },
    });
    expect(call!.summary["usage"]).toEqual({ "gpt-4o": { input_tokens: 12, output_tokens: 1 } });
    const { records } = await api.json<{ records: unknown[] }>("/call/log_records", { project_id: P, call_id: ids.spanId });
    expect(records).toHaveLength(4);
  });
});

describe("refusals, as gRPC status codes, and nothing stored", () => {
  const P = "acme/otel-grpc-refused";

  async function expectNothingStored(project: string): Promise<void> {
    await waitStored(service.url);
    expect(await api.lines("/calls/stream_query", { project_id: project })).toEqual([]);
  }

  it("UNAUTHENTICATED for a wrong key or none", async () => {
    const run = await runAgent(grpcEnv(P, { key: "not-a-key-of-this-service" }));
    for (const result of [...run.traceResults, ...run.logResults]) expect(result).toMatchObject({ code: 1, grpcCode: 16, message: "missing or invalid API key", statusDetails: null });
    const client = exportClient(service.otlpGrpcUrl!, "traces");
    const answer = await client.export(protobufBody({ spans: [] }), { project_id: P });
    client.close();
    expect(answer.ok ? 0 : answer.error.code).toBe(16);
    await expectNothingStored(P);
  });

  it("PERMISSION_DENIED for a key of another entity", async () => {
    const run = await runAgent(grpcEnv(P, { key: KEY_OTHER }));
    for (const result of [...run.traceResults, ...run.logResults]) expect(result).toMatchObject({ code: 1, grpcCode: 7, message: `this key may not reach project ${P}` });
    await expectNothingStored(P);
  });

  it("INVALID_ARGUMENT without a project", async () => {
    const run = await runAgent(grpcEnv(null));
    for (const result of [...run.traceResults, ...run.logResults]) {
      expect(result).toMatchObject({ code: 1, grpcCode: 3, message: "the project_id header is required: project_id: <entity>/<project>" });
    }
  });

  it("INVALID_ARGUMENT for a message that is not an export request, traces or logs, gzip or not", async () => {
    const garbage = Buffer.from("this is not protobuf \u00ff\u00fe", "latin1");
    for (const [kind, gzip] of [["traces", false], ["traces", true], ["logs", false], ["logs", true]] as const) {
      const client = exportClient(service.otlpGrpcUrl!, kind, { gzip });
      const answer = await client.export(garbage, grpcHeaders(P));
      client.close();
      expect(answer.ok, `${kind}, gzip ${gzip}`).toBe(false);
      if (!answer.ok) {
        expect(answer.error.code).toBe(3);
        expect(answer.error.details).toMatch(kind === "traces" ? /^invalid protobuf ExportTraceServiceRequest: / : /^invalid protobuf ExportLogsServiceRequest: /);
        expect(errorDetails(answer.error)).toBeNull();
      }
    }
    await expectNothingStored(P);
  });

  it("answers a Basic user name <entity>/<project> as the project when no project_id is sent", async () => {
    const langfuseStyle = `Basic ${Buffer.from(`acme/otel-grpc-basic:${KEY_ACME}`).toString("base64")}`;
    const client = exportClient(service.otlpGrpcUrl!, "traces");
    const spanId = "c0ffee0000000001";
    const answer = await client.export(protobufBody({ spans: [{ traceId: "c0ffee".padEnd(32, "1"), spanId, name: "from a collector", start: 1_767_225_600_000_000_000n, end: 1_767_225_601_000_000_000n }] }), { authorization: langfuseStyle });
    client.close();
    expect(answer).toMatchObject({ ok: true, response: Buffer.alloc(0) });
    expect((await readEventually("acme/otel-grpc-basic", spanId, (c) => c !== null))?.op_name).toBe("from a collector");
  });

  it("rejects the log records of no span in partial_success", async () => {
    const request = Buffer.from(ExportLogsServiceRequest.encode(ExportLogsServiceRequest.fromObject({
      resource_logs: [{ scope_logs: [{ scope: { name: "app" }, log_records: [{ time_unix_nano: "1767225600000000000", body: { string_value: "a process log line" } }] }] }],
    })).finish());
    const client = exportClient(service.otlpGrpcUrl!, "logs");
    const answer = await client.export(request, grpcHeaders(P));
    client.close();
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(ExportLogsServiceResponse.toObject(ExportLogsServiceResponse.decode(answer.response), { longs: Number })).toEqual({
      partial_success: {
        rejected_log_records: 1,
        error_message: '1 log records rejected: log record 0 of scope "app": no span (a valid trace id and span id): only the records of spans are kept',
      },
    });
  });

  it("takes the key as a Bearer token too", async () => {
    const client = exportClient(service.otlpGrpcUrl!, "traces");
    const answer = await client.export(protobufBody({ spans: [] }), { authorization: `Bearer ${KEY_ACME}`, project_id: P });
    client.close();
    expect(answer).toMatchObject({ ok: true, response: Buffer.alloc(0) });
  });
});

describe("OTLP_GRPC_PORT=0", () => {
  it("serves no OTLP/gRPC, and OTLP/HTTP as before", async () => {
    const off = await startTestService({ OTLP_GRPC_PORT: "0" });
    try {
      expect(off.otlpGrpcUrl).toBeNull();
      expect((await fetch(`${off.url}/health`)).status).toBe(200);
    } finally {
      await off.stop();
    }
  });
});
