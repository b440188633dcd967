/**
 * The OTLP endpoint end to end with the real OpenTelemetry JS exporters (protobuf and
 * JSON, gzip on and off) through the SDK's tracer provider and span processors: spans go
 * through ingest → queue → worker → ClickHouse and are read back through the calls API.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { context, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from "@opentelemetry/api";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { NodeTracerProvider } from "@opentelemetry/sdk-trace-node";
import { basic, KEY_ACME, serviceForFile } from "../support/service.js";
import { OTLP_PATH, RecordingExporter, storedRows } from "./httpSupport.js";

type Call = Record<string, unknown> & {
  id: string;
  parent_id: string | null;
  op_name: string;
  attributes: Record<string, unknown>;
  summary: Record<string, unknown>;
};

const P = "acme/otel";
const service = serviceForFile();
const api = service.api;

type Variant = { name: string; format: "protobuf" | "json"; gzip: boolean };
const VARIANTS: Variant[] = [
  { name: "exporter-trace-otlp-proto, gzip", format: "protobuf", gzip: true },
  { name: "exporter-trace-otlp-proto, no compression", format: "protobuf", gzip: false },
  { name: "exporter-trace-otlp-http (JSON), gzip", format: "json", gzip: true },
  { name: "exporter-trace-otlp-http (JSON), no compression", format: "json", gzip: false },
];

function exporterFor(variant: Variant, headers: Record<string, string> = { Authorization: basic(KEY_ACME), project_id: P }): RecordingExporter {
  const config = {
    url: `${service.url}${OTLP_PATH}`,
    headers,
    compression: variant.gzip ? CompressionAlgorithm.GZIP : CompressionAlgorithm.NONE,
    timeoutMillis: 20_000,
  };
  return new RecordingExporter(variant.format === "protobuf" ? new ProtoExporter(config) : new JsonExporter(config));
}

function providerWith(exporter: SpanExporter, batch = false, serviceName = "otel-e2e") {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": serviceName, "deployment.environment": "test" }),
    spanProcessors: [batch ? new BatchSpanProcessor(exporter, { maxExportBatchSize: 512, scheduledDelayMillis: 50 }) : new SimpleSpanProcessor(exporter)],
  });
}

const under = (parent: Span) => trace.setSpan(context.active(), parent);
const spanId = (span: Span) => span.spanContext().spanId;
const traceId = (span: Span) => span.spanContext().traceId;

/** Nanoseconds since the epoch → the ISO text the API answers (microseconds kept, rest cut). */
function isoMicros(seconds: number, nanos: number): string {
  const micros = Math.floor(nanos / 1000);
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${String(micros).padStart(6, "0")}Z`;
}

const query = (body: Record<string, unknown>) => api.lines<Call>("/calls/stream_query", { project_id: P, ...body });
const read = async (id: string) => (await api.json<{ call: Call | null }>("/call/read", { project_id: P, id })).call;

function expectExportsSucceeded(exporter: RecordingExporter, count?: number): void {
  expect(exporter.results.length).toBeGreaterThan(0);
  if (count !== undefined) expect(exporter.results).toHaveLength(count);
  for (const r of exporter.results) expect({ code: r.code, error: r.error?.message }).toEqual({ code: 0, error: undefined });
}

describe.each(VARIANTS)("$name", (variant) => {
  it("stores each span as a call, field by field", async () => {
    const exporter = exporterFor(variant);
    const provider = providerWith(exporter);
    const tracer = provider.getTracer("e2e.instrumentation", "2.3.4");
    const T = 1_767_225_600; // 2026-01-01T00:00:00Z
    const root = tracer.startSpan("agent turn", {
      kind: SpanKind.SERVER,
      startTime: [T, 123_456_789],
      attributes: { "wandb.display_name": "Turn one", "session.id": `session-${variant.format}-${variant.gzip}`, "input.value": '{"question":"2+2?"}', "app.retries": 2 },
    });
    const llm = tracer.startSpan(
      "chat gpt-4o",
      {
        kind: SpanKind.CLIENT,
        startTime: [T, 200_000_001],
        attributes: {
          "gen_ai.system": "openai",
          "gen_ai.operation.name": "chat",
          "gen_ai.request.model": "gpt-4o",
          "gen_ai.response.model": "gpt-4o-2024-08-06",
          "gen_ai.request.temperature": 0.2,
          "gen_ai.usage.input_tokens": 31,
          "gen_ai.usage.output_tokens": 7,
          "gen_ai.prompt": '[{"role":"user","content":"2+2?"}]',
          "gen_ai.completion": '[{"role":"assistant","content":"4"}]',
          "app.tags": ["a", "b"],
          "app.ok": true,
        },
        links: [{ context: root.spanContext(), attributes: { "link.reason": "caused-by" } }],
      },
      under(root),
    );
    llm.addEvent("gen_ai.choice", { "gen_ai.choice.index": 0 }, [T, 300_000_003]);
    llm.setStatus({ code: SpanStatusCode.ERROR, message: "rate limited" });
    llm.end([T, 400_000_004]);
    root.setAttribute("output.value", "4");
    root.end([T + 1, 999_999_999]);
    await provider.forceFlush();
    await provider.shutdown();
    expectExportsSucceeded(exporter, 2);

    const calls = await query({ filter: { trace_ids: [traceId(root)] } });
    expect(calls.map((c) => c.id).sort()).toEqual([spanId(root), spanId(llm)].sort());
    const rootCall = (await read(spanId(root)))!;
    const llmCall = (await read(spanId(llm)))!;

    expect(rootCall).toMatchObject({
      id: spanId(root),
      project_id: P,
      trace_id: traceId(root),
      parent_id: null,
      op_name: "agent turn",
      display_name: "Turn one",
      thread_id: `session-${variant.format}-${variant.gzip}`,
      turn_id: spanId(root),
      started_at: isoMicros(T, 123_456_789),
      ended_at: isoMicros(T + 1, 999_999_999),
      exception: null,
      inputs: { question: "2+2?" },
      output: "4",
      wb_user_id: "alice",
    });
    expect(rootCall.summary).toEqual({ weave: { status: "success", trace_name: "Turn one", latency_ms: 1876 } });
    expect(rootCall.attributes).toEqual({
      otel: {
        attributes: {
          wandb: { display_name: "Turn one" },
          session: { id: `session-${variant.format}-${variant.gzip}` },
          input: { value: '{"question":"2+2?"}' },
          output: { value: "4" },
          app: { retries: 2 },
        },
        resource: { service: { name: "otel-e2e" }, deployment: { environment: "test" } },
        scope: { name: "e2e.instrumentation", version: "2.3.4" },
      },
    });

    expect(llmCall).toMatchObject({
      id: spanId(llm),
      trace_id: traceId(root),
      parent_id: spanId(root),
      op_name: "chat gpt-4o",
      display_name: null,
      thread_id: null,
      turn_id: null,
      started_at: isoMicros(T, 200_000_001),
      ended_at: isoMicros(T, 400_000_004),
      exception: "rate limited",
      inputs: { value: [{ role: "user", content: "2+2?" }] },
      output: [{ role: "assistant", content: "4" }],
    });
    expect(llmCall.summary).toEqual({
      usage: { "gpt-4o-2024-08-06": { input_tokens: 31, output_tokens: 7 } },
      weave: { status: "error", trace_name: "chat gpt-4o", latency_ms: 200 },
    });
    expect(llmCall.attributes).toMatchObject({
      model: "gpt-4o-2024-08-06",
      system: "openai",
      operation: "chat",
      model_parameters: { temperature: 0.2 },
      otel: {
        attributes: {
          gen_ai: { request: { model: "gpt-4o", temperature: 0.2 }, usage: { input_tokens: 31, output_tokens: 7 } },
          app: { tags: ["a", "b"], ok: true },
        },
        scope: { name: "e2e.instrumentation", version: "2.3.4" },
      },
    });

    const stored = await storedRows(service.database, P, [spanId(llm)]);
    expect(stored.get(spanId(llm))!.otel_dump).toMatchObject({
      resource: { attributes: { "service.name": "otel-e2e", "deployment.environment": "test" } },
      scope: { name: "e2e.instrumentation", version: "2.3.4" },
      trace_id: traceId(root),
      span_id: spanId(llm),
      parent_span_id: spanId(root),
      name: "chat gpt-4o",
      kind: "SPAN_KIND_CLIENT",
      start_time_unix_nano: `${T}200000001`,
      end_time_unix_nano: `${T}400000004`,
      attributes: { "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 31, "app.tags": ["a", "b"] },
      events: [{ time_unix_nano: `${T}300000003`, name: "gen_ai.choice", attributes: { "gen_ai.choice.index": 0 } }],
      links: [{ trace_id: traceId(root), span_id: spanId(root), attributes: { "link.reason": "caused-by" } }],
      status: { code: "STATUS_CODE_ERROR", message: "rate limited" },
    });
    // Stored without the attributes that the call's attributes.otel keeps.
    expect(stored.get(spanId(llm))!.stored_dump).not.toHaveProperty("attributes");
    expect(stored.get(spanId(llm))!.stored_dump).not.toHaveProperty("resource");
  });
});

describe("a multi-span agent trace with GenAI attributes", () => {
  const session = "conv-7f3a";
  let ids: { root: string; plan: string; tool: string; failing: string; answer: string; trace: string };

  beforeAll(async () => {
    const exporter = new RecordingExporter(
      new ProtoExporter({ url: `${service.url}${OTLP_PATH}`, headers: { Authorization: basic(KEY_ACME), project_id: P }, compression: CompressionAlgorithm.GZIP }),
    );
    // NodeTracerProvider (sdk-trace-node) with a BatchSpanProcessor: one export for the whole trace.
    const provider = new NodeTracerProvider({
      resource: resourceFromAttributes({ "service.name": "travel-agent" }),
      spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 512, scheduledDelayMillis: 50 })],
    });
    const tracer: Tracer = provider.getTracer("agent.framework", "0.9.0");
    const T = 1_767_312_000;
    const root = tracer.startSpan("invoke_agent planner", {
      startTime: [T, 0],
      attributes: {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "planner",
        "gen_ai.conversation.id": session,
        "gen_ai.input.messages": JSON.stringify([{ role: "user", parts: [{ type: "text", content: "Trip to Lyon?" }] }]),
      },
    });
    const llm = (name: string, start: number, end: number, inTok: number, outTok: number, out: string) => {
      const span = tracer.startSpan(name, {
        kind: SpanKind.CLIENT,
        startTime: [T, start],
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.system": "openai",
          "gen_ai.request.model": "gpt-4o-mini",
          "gen_ai.request.max_tokens": 256,
          "gen_ai.usage.input_tokens": inTok,
          "gen_ai.usage.output_tokens": outTok,
          "gen_ai.input.messages": JSON.stringify([{ role: "user", content: "Trip to Lyon?" }]),
          "gen_ai.output.messages": JSON.stringify([{ role: "assistant", content: out }]),
        },
      }, under(root));
      span.end([T, end]);
      return span;
    };
    const plan = llm("chat gpt-4o-mini", 1_000_000, 90_000_000, 120, 30, "call search_trains");
    const tool = tracer.startSpan("execute_tool search_trains", {
      startTime: [T, 100_000_000],
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_trains", "input.value": '{"to":"Lyon"}', "output.value": '{"trains":["TGV 6601"]}' },
    }, under(root));
    tool.end([T, 180_000_000]);
    const failing = tracer.startSpan("execute_tool book_hotel", {
      startTime: [T, 200_000_000],
      attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_hotel", "input.value": '{"city":"Lyon"}' },
    }, under(root));
    failing.recordException(new Error("hotel API timed out"), [T, 250_000_000]);
    failing.setStatus({ code: SpanStatusCode.ERROR, message: "hotel API timed out" });
    failing.end([T, 260_000_000]);
    const answer = llm("chat gpt-4o-mini", 300_000_000, 700_000_000, 200, 80, "Take TGV 6601.");
    root.setAttribute("gen_ai.output.messages", JSON.stringify([{ role: "assistant", content: "Take TGV 6601." }]));
    root.end([T, 750_000_000]);
    await provider.forceFlush();
    await provider.shutdown();
    expectExportsSucceeded(exporter, 1);
    ids = { root: spanId(root), plan: spanId(plan), tool: spanId(tool), failing: spanId(failing), answer: spanId(answer), trace: traceId(root) };
  });

  it("keeps the tree shape", async () => {
    const calls = await query({ filter: { trace_ids: [ids.trace] } });
    expect(calls).toHaveLength(5);
    const parentOf = Object.fromEntries(calls.map((c) => [c.id, c.parent_id]));
    expect(parentOf).toEqual({ [ids.root]: null, [ids.plan]: ids.root, [ids.tool]: ids.root, [ids.failing]: ids.root, [ids.answer]: ids.root });
    expect((await query({ filter: { trace_ids: [ids.trace], trace_roots_only: true } })).map((c) => c.id)).toEqual([ids.root]);
    expect((await query({ filter: { parent_ids: [ids.root] } })).map((c) => c.id)).toEqual([ids.plan, ids.tool, ids.failing, ids.answer]);
  });

  it("maps the agent root: agent name, thread and turn, inputs and outputs", async () => {
    const root = (await read(ids.root))!;
    expect(root).toMatchObject({
      op_name: "invoke_agent planner",
      thread_id: session,
      turn_id: ids.root,
      inputs: { value: [{ role: "user", parts: [{ type: "text", content: "Trip to Lyon?" }] }] },
      output: [{ role: "assistant", content: "Take TGV 6601." }],
      exception: null,
    });
    expect(root.attributes).toMatchObject({ agent: "planner", operation: "invoke_agent" });
    expect(root.summary).toEqual({ weave: { status: "success", trace_name: "invoke_agent planner", latency_ms: 750 } });
  });

  it("maps LLM spans: model, parameters and token usage", async () => {
    const plan = (await read(ids.plan))!;
    const answer = (await read(ids.answer))!;
    expect(plan.attributes).toMatchObject({ model: "gpt-4o-mini", system: "openai", operation: "chat", model_parameters: { max_tokens: 256 } });
    expect(plan.summary).toEqual({
      usage: { "gpt-4o-mini": { input_tokens: 120, output_tokens: 30 } },
      weave: { status: "success", trace_name: "chat gpt-4o-mini", latency_ms: 89 },
    });
    expect(answer.summary.usage).toEqual({ "gpt-4o-mini": { input_tokens: 200, output_tokens: 80 } });
    expect(answer.output).toEqual([{ role: "assistant", content: "Take TGV 6601." }]);
    expect(plan.inputs).toEqual({ value: [{ role: "user", content: "Trip to Lyon?" }] });
  });

  it("maps the tool span and the failing span", async () => {
    const tool = (await read(ids.tool))!;
    expect(tool).toMatchObject({ inputs: { to: "Lyon" }, output: { trains: ["TGV 6601"] }, exception: null, summary: { weave: { status: "success" } } });
    expect(tool.attributes).toMatchObject({ operation: "execute_tool", otel: { attributes: { gen_ai: { tool: { name: "search_trains" } } } } });
    const failing = (await read(ids.failing))!;
    expect(failing).toMatchObject({ inputs: { city: "Lyon" }, output: null, exception: "hotel API timed out" });
    expect(failing.summary).toEqual({ weave: { status: "error", trace_name: "execute_tool book_hotel", latency_ms: 60 } });
    const dump = (await storedRows(service.database, P, [ids.failing])).get(ids.failing)!.otel_dump as { events: { name: string; attributes: Record<string, unknown> }[] };
    expect(dump.events).toHaveLength(1);
    expect(dump.events[0]).toMatchObject({ name: "exception", attributes: { "exception.type": "Error", "exception.message": "hotel API timed out" } });
  });

  it("counts the errors of the trace", async () => {
    const errors = await query({ filter: { trace_ids: [ids.trace] }, query: { $expr: { $eq: [{ $getField: "summary.weave.status" }, { $literal: "error" }] } } });
    expect(errors.map((c) => c.id)).toEqual([ids.failing]);
  });
});

describe("traces across exports", () => {
  it("connects a trace whose parent arrives in a later export", async () => {
    const exporter = exporterFor(VARIANTS[0]!);
    const provider = providerWith(exporter);
    const tracer = provider.getTracer("split");
    const root = tracer.startSpan("root", { startTime: [1_767_400_000, 0] });
    const a = tracer.startSpan("child a", { startTime: [1_767_400_000, 1_000] }, under(root));
    const b = tracer.startSpan("child b", { startTime: [1_767_400_000, 2_000] }, under(a));
    b.end([1_767_400_000, 3_000]);
    a.end([1_767_400_000, 4_000]);
    await provider.forceFlush(); // export 1 and 2: the children, their parent unknown yet
    const early = await query({ filter: { trace_ids: [traceId(root)] } });
    expect(early.map((c) => [c.id, c.parent_id])).toEqual([[spanId(a), spanId(root)], [spanId(b), spanId(a)]]);
    root.end([1_767_400_001, 0]);
    await provider.forceFlush(); // export 3: the root
    await provider.shutdown();
    expectExportsSucceeded(exporter, 3);

    const calls = await query({ filter: { trace_ids: [traceId(root)] } });
    expect(calls.map((c) => [c.id, c.parent_id])).toEqual([[spanId(root), null], [spanId(a), spanId(root)], [spanId(b), spanId(a)]]);
    expect((await query({ filter: { trace_ids: [traceId(root)], trace_roots_only: true } })).map((c) => c.id)).toEqual([spanId(root)]);
    expect((await query({ filter: { parent_ids: [spanId(a)] } })).map((c) => c.id)).toEqual([spanId(b)]);
  });

  it("never duplicates a call when the exporter sends the same spans again", async () => {
    const memory = new InMemorySpanExporter();
    const provider = providerWith(memory, false, "retry");
    const tracer = provider.getTracer("retry");
    const root = tracer.startSpan("resent root", { startTime: [1_767_500_000, 0] });
    for (let i = 0; i < 3; i++) tracer.startSpan(`resent child ${i}`, { startTime: [1_767_500_000, i * 1000] }, under(root)).end([1_767_500_000, i * 1000 + 500]);
    root.end([1_767_500_001, 0]);
    const spans = memory.getFinishedSpans();
    for (const variant of [VARIANTS[0]!, VARIANTS[3]!]) {
      const exporter = exporterFor(variant);
      for (let round = 0; round < 2; round++) await new Promise<void>((done) => exporter.export(spans, () => done()));
      await exporter.shutdown();
      expectExportsSucceeded(exporter, 2);
    }
    const calls = await query({ filter: { trace_ids: [traceId(root)] } });
    expect(calls).toHaveLength(4);
    expect(new Set(calls.map((c) => c.id)).size).toBe(4);
    const stats = await api.json<{ count: number }>("/calls/query_stats", { project_id: P, filter: { trace_ids: [traceId(root)] } });
    expect(stats.count).toBe(4);
  });

  it("refuses an exporter without the project header or key, and reports the failure", async () => {
    // Uncompressed: with gzip, the exporter may leave its request body unsent after an
    // early error answer, which holds the connection open until the keep-alive timeout.
    const noProject = exporterFor(VARIANTS[1]!, { Authorization: basic(KEY_ACME) });
    const noKey = exporterFor(VARIANTS[3]!, { project_id: P });
    const memory = new InMemorySpanExporter();
    const provider = providerWith(memory);
    provider.getTracer("x").startSpan("lost").end();
    for (const exporter of [noProject, noKey]) {
      await new Promise<void>((done) => exporter.export(memory.getFinishedSpans(), () => done()));
      await exporter.shutdown();
    }
    expect(noProject.results[0]).toMatchObject({ code: 1 });
    expect(noProject.results[0]!.error?.message).toMatch(/Bad Request/);
    expect((noProject.results[0]!.error as { data?: string }).data).toContain("project_id header is required");
    expect(noKey.results[0]).toMatchObject({ code: 1 });
    expect((noKey.results[0]!.error as { code?: number }).code).toBe(401);
  });
});
