/**
 * Usage counted once for GenAI span trees, whatever span repeats its children's usage: the
 * span shapes of the OpenTelemetry GenAI conventions as Vercel AI SDK 7 writes them
 * (`invoke_agent` → `step N` (`agent_step`) → `chat` / `execute_tool`, the agent span holding
 * the sum of its chat spans again), of Vercel AI SDK up to 6 (`ai.generateText` over
 * `ai.generateText.doGenerate`, under another model name), and of spans that name no
 * operation (a wrapper repeating its child's usage; a span with a model call of its own
 * besides its children's). Sent through the real OpenTelemetry JS SDK and exporter; read back
 * through /trace/usage, /calls/usage and /calls/stats, which must agree.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { context, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { untilRead } from "../support/polling.js";
import { basic, iso, KEY_ACME, serviceForFile } from "../support/service.js";
import { OTLP_PATH, RecordingExporter } from "./httpSupport.js";

const P = "acme/genai-usage";
const service = serviceForFile();
const api = service.api;
const T0 = Date.UTC(2026, 0, 5, 10);
const HOUR = 3_600_000;

interface Node {
  name: string;
  attributes?: Attributes;
  children?: Node[];
}

const chat = (model: string, input: number, output: number): Node => ({
  name: `chat ${model}`,
  attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": model, "gen_ai.response.model": model, "gen_ai.usage.input_tokens": input, "gen_ai.usage.output_tokens": output },
});

/** Vercel AI SDK 7: two steps, a tool call in the first; the agent span repeats the total. */
const VERCEL_7: Node = {
  name: "invoke_agent weather",
  attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 62, "gen_ai.usage.output_tokens": 22 },
  children: [
    { name: "step 1", attributes: { "gen_ai.operation.name": "agent_step" }, children: [chat("gpt-4o-mini", 40, 10), { name: "execute_tool weather", attributes: { "gen_ai.operation.name": "execute_tool" } }] },
    { name: "step 2", attributes: { "gen_ai.operation.name": "agent_step" }, children: [chat("gpt-4o-mini", 22, 12)] },
  ],
};

/** Vercel AI SDK 6: the outer span names the requested model, the provider call the answering one. */
const VERCEL_6: Node = {
  name: "ai.generateText",
  attributes: { "ai.operationId": "ai.generateText", "ai.model.id": "gpt-4o", "ai.usage.promptTokens": 7, "ai.usage.completionTokens": 3 },
  children: [
    {
      name: "ai.generateText.doGenerate",
      attributes: {
        "ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o", "ai.usage.promptTokens": 7, "ai.usage.completionTokens": 3,
        "gen_ai.request.model": "gpt-4o", "gen_ai.response.model": "gpt-4o-2024-08-06", "gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3,
      },
    },
  ],
};

/** No operation named: a wrapper that repeats its child's usage (15/6), over a span with a call of its own (5/2) besides its child's (10/4). */
const UNNAMED: Node = {
  name: "pipeline",
  attributes: { "llm.model_name": "claude-3-5-haiku", "llm.token_count.prompt": 15, "llm.token_count.completion": 6 },
  children: [
    {
      name: "planner",
      attributes: { "llm.model_name": "claude-3-5-haiku", "llm.token_count.prompt": 15, "llm.token_count.completion": 6 },
      children: [{ name: "llm", attributes: { "llm.model_name": "claude-3-5-haiku", "llm.token_count.prompt": 10, "llm.token_count.completion": 4 } }],
    },
  ],
};

const ids = new Map<Node, { spanId: string; traceId: string }>();

function emit(tracer: Tracer, node: Node, parent: Span | null, clock: { t: number }): void {
  const span = tracer.startSpan(node.name, { startTime: clock.t++, attributes: node.attributes ?? {} }, parent ? trace.setSpan(context.active(), parent) : undefined);
  ids.set(node, { spanId: span.spanContext().spanId, traceId: span.spanContext().traceId });
  for (const child of node.children ?? []) emit(tracer, child, span, clock);
  span.end(clock.t++);
}

const idOf = (node: Node) => ids.get(node)!.spanId;
const walk = (node: Node): Node[] => [node, ...(node.children ?? []).flatMap(walk)];

type Usage = { requests: number; prompt_tokens: number; completion_tokens: number; total_tokens: number };
type UsageRes = { call_usage: Record<string, Record<string, Usage>>; unfinished_call_ids: string[] };
const tokens = (prompt: number, completion: number): Usage => ({ requests: 0, prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });

beforeAll(async () => {
  const exporter = new RecordingExporter(
    new OTLPTraceExporter({ url: `${service.url}${OTLP_PATH}`, headers: { Authorization: basic(KEY_ACME), project_id: P }, compression: CompressionAlgorithm.GZIP, timeoutMillis: 20_000 }),
  );
  const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": "genai-usage" }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const tracer = provider.getTracer("genai-usage");
  const clock = { t: T0 };
  for (const root of [VERCEL_7, VERCEL_6, UNNAMED]) emit(tracer, root, null, clock);
  await provider.forceFlush();
  await provider.shutdown();
  expect(exporter.results.map((r) => r.code)).toEqual([VERCEL_7, VERCEL_6, UNNAMED].flatMap(walk).map(() => 0));
  // Readable once every span is stored (the answer may come before storage with the durable log).
  const all = [VERCEL_7, VERCEL_6, UNNAMED].flatMap(walk).length;
  await untilRead(() => api.lines("/calls/stream_query", { project_id: P }), (calls) => calls.length >= all, { timeoutMs: 20_000, everyMs: 100 });
});

/** What each call and its descendants spent, as both usage endpoints must answer it. */
const EXPECTED: [string, () => Node, Record<string, Usage>][] = [
  ["Vercel AI SDK 7: the agent", () => VERCEL_7, { "gpt-4o-mini": tokens(62, 22) }],
  ["Vercel AI SDK 7: step 1", () => VERCEL_7.children![0]!, { "gpt-4o-mini": tokens(40, 10) }],
  ["Vercel AI SDK 7: the tool", () => VERCEL_7.children![0]!.children![1]!, {}],
  ["Vercel AI SDK 7: step 2's chat", () => VERCEL_7.children![1]!.children![0]!, { "gpt-4o-mini": tokens(22, 12) }],
  ["Vercel AI SDK 6: ai.generateText", () => VERCEL_6, { "gpt-4o-2024-08-06": tokens(7, 3) }],
  ["no operation: the pipeline (a wrapper of its planner)", () => UNNAMED, { "claude-3-5-haiku": tokens(15, 6) }],
  ["no operation: the planner (its own call and its llm's)", () => UNNAMED.children![0]!, { "claude-3-5-haiku": tokens(15, 6) }],
  ["no operation: the llm", () => UNNAMED.children![0]!.children![0]!, { "claude-3-5-haiku": tokens(10, 4) }],
];

describe("usage of GenAI span trees, counted once", () => {
  it.each(EXPECTED)("/trace/usage and /calls/usage: %s", async (_name, node, want) => {
    const n = node();
    const byTrace = await api.json<UsageRes>("/trace/usage", { project_id: P, filter: { trace_ids: [ids.get(n)!.traceId] } });
    const byCall = await api.json<UsageRes>("/calls/usage", { project_id: P, call_ids: [idOf(n)] });
    expect(byTrace.call_usage[idOf(n)]).toEqual(want);
    expect(byCall.call_usage[idOf(n)]).toEqual(want);
  });

  it("/calls/stats sums each model call once, one value per call that spent tokens", async () => {
    const res = await api.json<{ usage_buckets: Record<string, unknown>[] }>("/calls/stats", {
      project_id: P, start: iso(T0), end: iso(T0 + HOUR), granularity: 3600,
      usage_metrics: [{ metric: "input_tokens" }, { metric: "output_tokens" }, { metric: "total_tokens", aggregations: ["sum", "count"] }],
      call_metrics: [],
    });
    const rows = res.usage_buckets.map(({ model, sum_input_tokens, sum_output_tokens, sum_total_tokens, count_total_tokens }) => ({ model, sum_input_tokens, sum_output_tokens, sum_total_tokens, count_total_tokens }));
    expect(rows).toEqual([
      // The planner's own 5/2 beyond its llm, and the llm's 10/4; the pipeline repeats its planner.
      { model: "claude-3-5-haiku", sum_input_tokens: 15, sum_output_tokens: 6, sum_total_tokens: 21, count_total_tokens: 2 },
      { model: "gpt-4o-2024-08-06", sum_input_tokens: 7, sum_output_tokens: 3, sum_total_tokens: 10, count_total_tokens: 1 },
      { model: "gpt-4o-mini", sum_input_tokens: 62, sum_output_tokens: 22, sum_total_tokens: 84, count_total_tokens: 2 },
    ]);
  });

  it("keeps each span's summary.usage as the client sent it", async () => {
    const agent = (await api.json<{ call: { summary: { usage?: unknown } } }>("/call/read", { project_id: P, id: idOf(VERCEL_7) })).call;
    expect(agent.summary.usage).toEqual({ "gpt-4o-mini": { input_tokens: 62, output_tokens: 22 } });
  });
});
