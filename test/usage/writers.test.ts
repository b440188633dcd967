import { beforeAll, describe, expect, it } from "vitest";
import { context, trace, type Span, type Tracer } from "@opentelemetry/api";
import { CompressionAlgorithm } from "@opentelemetry/otlp-exporter-base";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { basic, iso, KEY_ACME, serviceForFile } from "../support/service.js";
import { OTLP_PATH, RecordingExporter } from "../otlp/httpSupport.js";

/**
 * Usage totals count each token once, whichever client wrote the trace: the same traces
 * (what each call actually spent) written as the Weave TypeScript SDK writes them, as the
 * Weave Python SDK does, through the real OpenTelemetry JS exporter, and as plain API
 * calls; /calls/usage, /trace/usage and /calls/stats must answer the tokens spent, per
 * model, also when parents arrive before their children.
 *
 * The Weave SDKs are not installed here: their requests are replayed with the shapes and
 * the summary roll-up read from their sources (TypeScript `weaveClient.ts`: a call's summary
 * is its own usage, `requests: 1` added per model, deep-summed with the summaries of the
 * children that ended before it; Python `weave_client.py`: a call with children sends the
 * leaf-wise sum of its children's summaries, a call without them its own usage).
 */

type Spend = Record<string, { prompt: number; completion: number }>;
/** One call of a trace and what it spent itself. */
interface Op {
  name: string;
  spent?: Spend;
  children?: Op[];
}

const GPT = "gpt-4o";
const MINI = "gpt-4o-mini";
const CLAUDE = "claude-3-7-sonnet-20250219";
const PRICES: Record<string, { prompt: number; completion: number }> = {
  [GPT]: { prompt: 2.5e-6, completion: 1e-5 },
  [MINI]: { prompt: 1.5e-7, completion: 6e-7 },
  [CLAUDE]: { prompt: 3e-6, completion: 1.5e-5 },
};

/** A root that made its own LLM call, over usage at several levels. */
const AGENT: Op = {
  name: "agent",
  spent: { [GPT]: { prompt: 10, completion: 2 } },
  children: [
    { name: "plan", children: [{ name: "llm-a", spent: { [GPT]: { prompt: 20, completion: 5 } } }, { name: "llm-b", spent: { [CLAUDE]: { prompt: 7, completion: 3 } } }] },
    { name: "tool", children: [{ name: "llm-c", spent: { [GPT]: { prompt: 5, completion: 1 } } }] },
    { name: "llm-d", spent: { [MINI]: { prompt: 100, completion: 10 } } },
  ],
};
/** A root with no LLM call of its own. */
const PIPELINE: Op = {
  name: "pipeline",
  children: [{ name: "step", children: [{ name: "llm-e", spent: { [GPT]: { prompt: 30, completion: 4 } } }, { name: "llm-f", spent: { [GPT]: { prompt: 1, completion: 1 } } }] }],
};
/**
 * The Python SDK sends a call's own LLM usage only when the call has no children, so its
 * root that made its own LLM call is a trace of that one call; its agent spent nothing itself.
 */
const CHAT: Op = { name: "chat", spent: { [GPT]: { prompt: 3, completion: 1 } } };
const PY_AGENT: Op = { ...AGENT, spent: undefined };

const walk = (op: Op): Op[] => [op, ...(op.children ?? []).flatMap(walk)];

type Usage = { requests: number; prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_total_cost?: number; completion_tokens_total_cost?: number };
type UsageRes = { call_usage: Record<string, Record<string, Usage>>; unfinished_call_ids: string[] };

/** What `op` and its descendants spent, per model; requests counts LLM calls when the writer reports them. */
function spentBelow(op: Op, countsRequests: boolean, withCosts = false): Record<string, Usage> {
  const out: Record<string, Usage> = {};
  for (const node of walk(op)) {
    for (const [model, s] of Object.entries(node.spent ?? {})) {
      const t = (out[model] ??= { requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, ...(withCosts ? { prompt_tokens_total_cost: 0, completion_tokens_total_cost: 0 } : {}) });
      t.requests += countsRequests ? 1 : 0;
      t.prompt_tokens += s.prompt;
      t.completion_tokens += s.completion;
      t.total_tokens += s.prompt + s.completion;
      if (withCosts) {
        t.prompt_tokens_total_cost! += s.prompt * PRICES[model]!.prompt;
        t.completion_tokens_total_cost! += s.completion * PRICES[model]!.completion;
      }
    }
  }
  return out;
}

function expectUsage(got: Record<string, Usage> | undefined, want: Record<string, Usage>): void {
  const costs = (u: Usage) => [u.prompt_tokens_total_cost, u.completion_tokens_total_cost];
  const counts = (u: Usage) => ({ ...u, prompt_tokens_total_cost: undefined, completion_tokens_total_cost: undefined });
  expect(Object.keys(got ?? {}).sort()).toEqual(Object.keys(want).sort());
  for (const [model, w] of Object.entries(want)) {
    expect(counts(got![model]!), model).toEqual(counts(w));
    const [gp, gc] = costs(got![model]!);
    const [wp, wc] = costs(w);
    if (wp === undefined) continue;
    expect(gp).toBeCloseTo(wp, 15);
    expect(gc).toBeCloseTo(wc!, 15);
  }
}

// ---- the Weave SDKs' summaries -------------------------------------------------------

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Deep sum of numeric leaves, as both SDKs merge summaries. */
function addLeaves(a: Json, b: Json): Json {
  const out: Json = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const mine = out[k];
    if (typeof v === "number" && typeof mine === "number") out[k] = mine + v;
    else if (isObject(v) && isObject(mine)) out[k] = addLeaves(mine, v);
    else if (mine === undefined) out[k] = v;
  }
  return out;
}

/** The usage an LLM integration reports for one request: OpenAI names and details for GPT models, Anthropic names for Claude. */
function integrationUsage(spent: Spend): Json {
  const usage: Json = {};
  for (const [model, s] of Object.entries(spent)) {
    usage[model] = model.startsWith("claude")
      ? { requests: 1, input_tokens: s.prompt, output_tokens: s.completion }
      : { requests: 1, prompt_tokens: s.prompt, completion_tokens: s.completion, total_tokens: s.prompt + s.completion, prompt_tokens_details: { cached_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0 } };
  }
  return { usage };
}

type Sdk = "js-sdk" | "python-sdk";

/** The summary the SDK sends for `op`, given its children's. */
function sdkSummary(sdk: Sdk, op: Op, children: Json[]): Json {
  const own = op.spent ? integrationUsage(op.spent) : {};
  const fromChildren = children.reduce(addLeaves, {});
  if (sdk === "python-sdk") return children.length > 0 ? fromChildren : own;
  return addLeaves(own, fromChildren);
}

interface BatchItem { mode: "start" | "end"; req: Json }

/** The queue items the SDK sends for one trace, in the order it makes them: a start when a call starts, an end when it ends. */
function sdkItems(sdk: Sdk, project: string, root: Op, traceId: string, t0: number): BatchItem[] {
  const items: BatchItem[] = [];
  let clock = t0;
  const run = (op: Op, parentId: string | null): Json => {
    const id = `${traceId}-${op.name}`;
    items.push({ mode: "start", req: { start: startOf(sdk, project, op, id, traceId, parentId, iso(clock++)) } });
    const summary = sdkSummary(sdk, op, (op.children ?? []).map((child) => run(child, id)));
    items.push({ mode: "end", req: { end: { project_id: project, id, trace_id: traceId, ended_at: iso(clock++), output: { ok: true }, summary, ...(sdk === "python-sdk" ? { exception: null, wb_run_step_end: null } : {}) } } });
    return summary;
  };
  run(root, null);
  return items;
}

function startOf(sdk: Sdk, project: string, op: Op, id: string, traceId: string, parentId: string | null, startedAt: string): Json {
  const opName = `weave:///${project}/op/${op.name}:${"0".repeat(12)}`;
  if (sdk === "js-sdk") {
    // The TypeScript SDK leaves parent_id out of a root's start (undefined).
    return { project_id: project, id, op_name: opName, trace_id: traceId, ...(parentId ? { parent_id: parentId } : {}), started_at: startedAt, attributes: { weave: { client_version: "0.11.0", source: "js-sdk" } }, inputs: { arg0: op.name } };
  }
  return {
    project_id: project, id, op_name: opName, display_name: null, trace_id: traceId, parent_id: parentId, thread_id: null, turn_id: null, started_at: startedAt,
    attributes: { weave: { client_version: "0.52.0", source: "python-sdk", sys_version: "3.12.3", os_name: "Linux", os_version: "#1 SMP", os_release: "6.8.0" } },
    inputs: { prompt: op.name }, wb_user_id: null, wb_run_id: null, wb_run_step: null,
  };
}

// ---- the service ---------------------------------------------------------------------

const service = serviceForFile();
const api = service.api;
const T0 = Date.UTC(2025, 5, 2, 9);
const HOUR = 3_600_000;


async function setPrices(project: string): Promise<void> {
  const costs = Object.fromEntries(Object.entries(PRICES).map(([m, p]) => [m, { prompt_token_cost: p.prompt, completion_token_cost: p.completion, effective_date: "2025-01-01T00:00:00Z" }]));
  await api.json("/cost/create", { project_id: project, costs });
}

const callsUsage = (project: string, ids: string[], includeCosts = false) => api.json<UsageRes>("/calls/usage", { project_id: project, call_ids: ids, include_costs: includeCosts });

/** Every call of each trace, through /calls/usage and /trace/usage, holds what it and its descendants spent. */
async function expectTotals(project: string, traces: { root: Op; traceId: string; idOf: (op: Op) => string }[], countsRequests: boolean): Promise<void> {
  for (const t of traces) {
    const nodes = walk(t.root);
    const byCall = await callsUsage(project, nodes.map(t.idOf), true);
    const byTrace = await api.json<UsageRes>("/trace/usage", { project_id: project, filter: { trace_ids: [t.traceId] } });
    expect(Object.keys(byTrace.call_usage).sort()).toEqual(nodes.map(t.idOf).sort());
    for (const node of nodes) {
      expectUsage(byCall.call_usage[t.idOf(node)], spentBelow(node, countsRequests, true));
      expectUsage(byTrace.call_usage[t.idOf(node)], spentBelow(node, countsRequests));
    }
    expect(byCall.unfinished_call_ids).toEqual([]);
  }
}

/** /calls/stats over the hour of the traces: per model, the tokens spent and one value per call that spent them. */
async function expectStats(project: string, roots: Op[]): Promise<void> {
  const res = await api.json<{ usage_buckets: Record<string, unknown>[] }>("/calls/stats", {
    project_id: project, start: iso(T0), end: iso(T0 + HOUR), granularity: 3600,
    usage_metrics: [{ metric: "input_tokens" }, { metric: "output_tokens" }, { metric: "total_tokens", aggregations: ["sum", "count", "min"] }, { metric: "total_cost" }],
    call_metrics: [],
  });
  const calls = roots.flatMap(walk).flatMap((op) => Object.entries(op.spent ?? {}));
  const models = [...new Set(calls.map(([m]) => m))].sort();
  expect(res.usage_buckets.map((b) => b.model)).toEqual(models);
  for (const b of res.usage_buckets) {
    const spent = calls.filter(([m]) => m === b.model).map(([, s]) => s);
    const price = PRICES[b.model as string]!;
    expect(b).toMatchObject({
      timestamp: iso(T0),
      sum_input_tokens: spent.reduce((n, s) => n + s.prompt, 0),
      sum_output_tokens: spent.reduce((n, s) => n + s.completion, 0),
      sum_total_tokens: spent.reduce((n, s) => n + s.prompt + s.completion, 0),
      count_total_tokens: spent.length,
      min_total_tokens: Math.min(...spent.map((s) => s.prompt + s.completion)),
    });
    expect(b.sum_total_cost).toBeCloseTo(spent.reduce((n, s) => n + s.prompt * price.prompt + s.completion * price.completion, 0), 15);
  }
}

// ---- the writers -----------------------------------------------------------------------

describe.each([
  { sdk: "js-sdk" as const, project: "acme/writers-js", roots: [AGENT, PIPELINE] },
  { sdk: "python-sdk" as const, project: "acme/writers-py", roots: [PY_AGENT, PIPELINE, CHAT] },
])("Weave SDK $sdk (its requests replayed)", ({ sdk, project, roots }) => {
  const traces = roots.map((root, i) => ({ root, traceId: `${sdk}-trace-${i}`, idOf: (op: Op) => `${sdk}-trace-${i}-${op.name}` }));

  beforeAll(async () => {
    await setPrices(project);
    const [first, ...rest] = traces;
    // The first trace in order, in two flushes; the others with every parent before its children.
    const items = sdkItems(sdk, project, first!.root, first!.traceId, T0);
    await api.json("/call/upsert_batch", { batch: items.slice(0, 5) });
    await api.json("/call/upsert_batch", { batch: items.slice(5) });
    for (const [i, t] of rest.entries()) await parentsFirst(sdk, project, t, T0 + (i + 1) * 60_000);
  });

  /** Ends before starts, parents before children: every step adds a level; after each, the root's total is already right. */
  async function parentsFirst(s: Sdk, p: string, t: (typeof traces)[number], t0: number): Promise<void> {
    const items = sdkItems(s, p, t.root, t.traceId, t0);
    const idOf = (item: BatchItem) => String(((item.req.start ?? item.req.end) as Json).id);
    const depth = new Map<string, number>();
    const mark = (op: Op, d: number): void => { depth.set(t.idOf(op), d); op.children?.forEach((c) => mark(c, d + 1)); };
    mark(t.root, 0);
    for (let d = 0; d <= Math.max(...depth.values()); d++) {
      const level = items.filter((item) => depth.get(idOf(item)) === d);
      await api.json("/call/upsert_batch", { batch: [...level.filter((i) => i.mode === "end"), ...level.filter((i) => i.mode === "start")] });
      expectUsage((await callsUsage(p, [t.idOf(t.root)])).call_usage[t.idOf(t.root)], spentBelow(t.root, true));
    }
  }

  it("answers the tokens spent below each call through /calls/usage (with costs) and /trace/usage", async () => {
    await expectTotals(project, traces, true);
  });

  it("counts each LLM call once in /calls/stats: tokens, costs and one value per call that spent them", async () => {
    await expectStats(project, roots);
  });

  it("reads one call's summary.usage and include_costs as the client sent them", async () => {
    const root = traces[0]!;
    const sent = sdkItems(sdk, project, root.root, root.traceId, T0).find((i) => i.mode === "end" && (i.req.end as Json).id === root.idOf(root.root))!;
    const sentUsage = ((sent.req.end as Json).summary as Json).usage as Record<string, Json>;
    const [call] = await api.lines<{ summary: { usage: Json; weave: { costs: Record<string, Json> } } }>("/calls/stream_query", {
      project_id: project, filter: { call_ids: [root.idOf(root.root)] }, include_costs: true,
    });
    expect(call!.summary.usage).toEqual(sentUsage);
    const gpt = sentUsage[GPT]!;
    expect(call!.summary.weave.costs[GPT]).toMatchObject({ prompt_tokens: gpt.prompt_tokens, prompt_tokens_total_cost: (gpt.prompt_tokens as number) * PRICES[GPT]!.prompt });
  });
});

describe("OpenTelemetry JS exporter (exporter-trace-otlp-proto): each span's own usage", () => {
  const project = "acme/writers-otel";
  const traces: { root: Op; traceId: string; idOf: (op: Op) => string }[] = [];

  /** Runs `root` as spans: a span per call, its own gen_ai usage attributes; `rootEndsFirst` ends the root before its descendants. */
  function emit(tracer: Tracer, root: Op, t0: number, rootEndsFirst: boolean): void {
    const ids = new Map<Op, Span>();
    let clock = t0;
    const open = (op: Op, parent: Span | null) => {
      const attributes: Record<string, string | number> = {};
      for (const [model, s] of Object.entries(op.spent ?? {})) {
        Object.assign(attributes, { "gen_ai.system": "openai", "gen_ai.request.model": model, "gen_ai.usage.input_tokens": s.prompt, "gen_ai.usage.output_tokens": s.completion });
      }
      const span = tracer.startSpan(op.name, { startTime: clock++, attributes }, parent ? trace.setSpan(context.active(), parent) : undefined);
      ids.set(op, span);
      op.children?.forEach((c) => open(c, span));
    };
    open(root, null);
    const order = walk(root).reverse();
    if (rootEndsFirst) order.unshift(order.pop()!);
    for (const op of order) ids.get(op)!.end(clock++);
    traces.push({ root, traceId: ids.get(root)!.spanContext().traceId, idOf: (op) => ids.get(op)!.spanContext().spanId });
  }

  beforeAll(async () => {
    await setPrices(project);
    const exporter = new RecordingExporter(new OTLPTraceExporter({
      url: `${service.url}${OTLP_PATH}`, headers: { Authorization: basic(KEY_ACME), project_id: project }, compression: CompressionAlgorithm.NONE, timeoutMillis: 20_000,
    }));
    const provider = new BasicTracerProvider({ resource: resourceFromAttributes({ "service.name": "writers" }), spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const tracer = provider.getTracer("writers");
    emit(tracer, AGENT, T0, false);
    emit(tracer, PIPELINE, T0 + 60_000, true);
    await provider.forceFlush();
    await provider.shutdown();
    expect(exporter.results.map((r) => r.code)).toEqual(walk(AGENT).concat(walk(PIPELINE)).map(() => 0));
  });

  it("answers the tokens spent below each call through /calls/usage (with costs) and /trace/usage", async () => {
    await expectTotals(project, traces, false);
  });

  it("counts each LLM call once in /calls/stats", async () => {
    await expectStats(project, [AGENT, PIPELINE]);
  });
});

describe("plain API calls (/call/start, /call/end): each call's own usage", () => {
  const project = "acme/writers-api";
  const traces = [AGENT, PIPELINE].map((root, i) => ({ root, traceId: `api-trace-${i}`, idOf: (op: Op) => `api-${i}-${op.name}` }));

  beforeAll(async () => {
    await setPrices(project);
    for (const [i, t] of traces.entries()) {
      const nodes = walk(t.root);
      const parentOf = (op: Op) => nodes.find((n) => n.children?.includes(op));
      const start = (op: Op, j: number) =>
        api.json("/call/start", { start: { project_id: project, id: t.idOf(op), op_name: op.name, trace_id: t.traceId, parent_id: parentOf(op) ? t.idOf(parentOf(op)!) : null, started_at: iso(T0 + i * 60_000 + j), attributes: {}, inputs: {} } });
      const end = (op: Op, j: number) =>
        api.json("/call/end", { end: { project_id: project, id: t.idOf(op), ended_at: iso(T0 + i * 60_000 + 100 + j), summary: op.spent ? integrationUsage(op.spent) : {} } });
      if (i === 0) {
        for (const [j, op] of nodes.entries()) await start(op, j);
        for (const [j, op] of [...nodes].reverse().entries()) await end(op, j);
      } else {
        // Parents first, each end before its start.
        for (const [j, op] of nodes.entries()) {
          await end(op, j);
          await start(op, j);
        }
      }
    }
  });

  it("answers the tokens spent below each call through /calls/usage (with costs) and /trace/usage", async () => {
    await expectTotals(project, traces, true);
  });

  it("counts each LLM call once in /calls/stats", async () => {
    await expectStats(project, [AGENT, PIPELINE]);
  });
});
