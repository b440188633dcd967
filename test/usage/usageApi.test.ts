import { beforeAll, describe, expect, it } from "vitest";
import { client, iso, KEY_OTHER, serviceForFile } from "../support/service.js";

/**
 * /calls/usage and /trace/usage through HTTP: usage rolled up over a call tree with several
 * models, unfinished calls, deletions and costs, compared with figures computed here.
 */

type Usage = { requests: number; prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_total_cost?: number; completion_tokens_total_cost?: number };
type UsageRes = { call_usage: Record<string, Record<string, Usage>>; unfinished_call_ids: string[]; skipped_call_ids?: string[] };

const service = serviceForFile();
const api = service.api;
const P = "acme/usage";
const T0 = Date.UTC(2025, 4, 1, 12);

interface Node {
  id: string;
  parent: string | null;
  trace: string;
  usage?: Record<string, Record<string, number | null>>;
  running?: boolean;
}

/**
 *  root (gpt-4o)                       trace t1
 *  ├── a (gpt-4o, explicit total)
 *  │   ├── a1 (claude: input/output names)
 *  │   └── a2 running, no usage
 *  ├── b running (gpt-4o-mini)
 *  │   └── b1 (gpt-4o-mini + gpt-4o)
 *  └── c (no usage)
 *  other (gpt-4o)                      trace t2
 */
const TREE: Node[] = [
  { id: "root", parent: null, trace: "t1", usage: { "gpt-4o": { prompt_tokens: 10, completion_tokens: 5, requests: 1 } } },
  { id: "a", parent: "root", trace: "t1", usage: { "gpt-4o": { prompt_tokens: 100, completion_tokens: 50, requests: 1, total_tokens: 160 } } },
  { id: "a1", parent: "a", trace: "t1", usage: { "claude-3-7-sonnet-20250219": { input_tokens: 7, output_tokens: 3, requests: 1 } } },
  { id: "a2", parent: "a", trace: "t1", running: true },
  { id: "b", parent: "root", trace: "t1", running: true },
  { id: "b1", parent: "b", trace: "t1", usage: { "gpt-4o-mini": { prompt_tokens: 1000, completion_tokens: 10, requests: 2 }, "gpt-4o": { prompt_tokens: 1, completion_tokens: 1 } } },
  { id: "c", parent: "root", trace: "t1" },
  { id: "other", parent: null, trace: "t2", usage: { "gpt-4o": { prompt_tokens: 42, completion_tokens: 1, requests: 1 } } },
];
// Project prices for two models; claude gets its default price (3e-6 / 1.5e-5).
const PRICES: Record<string, { prompt: number; completion: number }> = {
  "gpt-4o": { prompt: 2e-6, completion: 9e-6 },
  "gpt-4o-mini": { prompt: 1e-7, completion: 4e-7 },
  "claude-3-7-sonnet-20250219": { prompt: 3e-6, completion: 1.5e-5 },
};

function own(node: Node): Record<string, Usage> {
  const out: Record<string, Usage> = {};
  for (const [model, u] of Object.entries(node.usage ?? {})) {
    const prompt = u.prompt_tokens ?? u.input_tokens ?? 0;
    const completion = u.completion_tokens ?? u.output_tokens ?? 0;
    out[model] = { requests: u.requests ?? 0, prompt_tokens: prompt, completion_tokens: completion, total_tokens: u.total_tokens ?? prompt + completion };
  }
  return out;
}

function subtree(id: string, nodes: Node[] = TREE): Node[] {
  const self = nodes.find((n) => n.id === id);
  return self ? [self, ...nodes.filter((n) => n.parent === id).flatMap((n) => subtree(n.id, nodes))] : [];
}

function expected(id: string, withCosts: boolean, nodes: Node[] = TREE): Record<string, Usage> {
  const out: Record<string, Usage> = {};
  for (const node of subtree(id, nodes)) {
    for (const [model, u] of Object.entries(own(node))) {
      const t = (out[model] ??= { requests: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, ...(withCosts ? { prompt_tokens_total_cost: 0, completion_tokens_total_cost: 0 } : {}) });
      t.requests += u.requests;
      t.prompt_tokens += u.prompt_tokens;
      t.completion_tokens += u.completion_tokens;
      t.total_tokens += u.total_tokens;
      if (withCosts) {
        t.prompt_tokens_total_cost! += u.prompt_tokens * PRICES[model]!.prompt;
        t.completion_tokens_total_cost! += u.completion_tokens * PRICES[model]!.completion;
      }
    }
  }
  return out;
}

function expectUsage(got: Record<string, Usage> | undefined, want: Record<string, Usage>): void {
  expect(Object.keys(got ?? {}).sort()).toEqual(Object.keys(want).sort());
  for (const [model, w] of Object.entries(want)) {
    const g = got![model]!;
    expect({ ...g, prompt_tokens_total_cost: undefined, completion_tokens_total_cost: undefined }).toEqual({ ...w, prompt_tokens_total_cost: undefined, completion_tokens_total_cost: undefined });
    if (w.prompt_tokens_total_cost !== undefined) {
      expect(g.prompt_tokens_total_cost).toBeCloseTo(w.prompt_tokens_total_cost, 15);
      expect(g.completion_tokens_total_cost).toBeCloseTo(w.completion_tokens_total_cost!, 15);
    } else {
      expect(g.prompt_tokens_total_cost).toBeUndefined();
    }
  }
}

async function ingest(project: string, nodes: Node[]): Promise<void> {
  const batch = nodes.flatMap((n, i) => [
    { mode: "start", req: { start: { project_id: project, id: n.id, op_name: `op-${n.id}`, trace_id: n.trace, parent_id: n.parent, started_at: iso(T0 + i * 1000), attributes: {}, inputs: {} } } },
    ...(n.running ? [] : [{ mode: "end", req: { end: { project_id: project, id: n.id, ended_at: iso(T0 + i * 1000 + 500), summary: n.usage ? { usage: n.usage } : {} } } }]),
  ]);
  await api.json("/call/upsert_batch", { batch });
}

beforeAll(async () => {
  await ingest(P, TREE);
  await api.json("/cost/create", {
    project_id: P,
    costs: {
      "gpt-4o": { prompt_token_cost: PRICES["gpt-4o"]!.prompt, completion_token_cost: PRICES["gpt-4o"]!.completion, effective_date: "2025-01-01T00:00:00Z" },
      "gpt-4o-mini": { prompt_token_cost: PRICES["gpt-4o-mini"]!.prompt, completion_token_cost: PRICES["gpt-4o-mini"]!.completion, effective_date: "2025-01-01T00:00:00Z" },
    },
  });
});

const callsUsage = (body: Record<string, unknown>) => api.json<UsageRes>("/calls/usage", { project_id: P, ...body });

describe("/calls/usage", () => {
  it("rolls each call's usage up with all its descendants', per model, and lists unfinished calls", async () => {
    const res = await callsUsage({ call_ids: ["root", "a", "b", "other", "c"] });
    for (const id of ["root", "a", "b", "other", "c"]) expectUsage(res.call_usage[id], expected(id, false));
    expect(res.call_usage.c).toEqual({});
    expect(res.unfinished_call_ids).toEqual(["a2", "b"]);
    expect(res.call_usage.root!["gpt-4o"]).toEqual({ requests: 2, prompt_tokens: 111, completion_tokens: 56, total_tokens: 15 + 160 + 2 });
  });

  it("lists only the unfinished calls below the asked ones", async () => {
    expect((await callsUsage({ call_ids: ["a1"] })).unfinished_call_ids).toEqual([]);
    expect((await callsUsage({ call_ids: ["a"] })).unfinished_call_ids).toEqual(["a2"]);
    expect((await callsUsage({ call_ids: ["other"] })).unfinished_call_ids).toEqual([]);
  });

  it("adds costs when asked: each call priced at its start, summed", async () => {
    const res = await callsUsage({ call_ids: ["root", "a1", "other"], include_costs: true });
    for (const id of ["root", "a1", "other"]) expectUsage(res.call_usage[id], expected(id, true));
  });

  it("answers {} for unknown and deleted calls, and leaves deleted subtrees out", async () => {
    const D = "acme/usage-deletes";
    await ingest(D, TREE);
    expect(await api.json("/calls/delete", { project_id: D, call_ids: ["a"] })).toEqual({ num_deleted: 1 });
    const res = await api.json<UsageRes>("/calls/usage", { project_id: D, call_ids: ["root", "a", "nope"] });
    const left = TREE.filter((n) => !["a", "a1", "a2"].includes(n.id));
    expectUsage(res.call_usage.root, expected("root", false, left));
    expect(res.call_usage.a).toEqual({});
    expect(res.call_usage.nope).toEqual({});
    expect(res.unfinished_call_ids).toEqual(["b"]);
    expect(await api.json("/calls/usage", { project_id: D, call_ids: [] })).toEqual({ call_usage: {}, unfinished_call_ids: [] });
  });

  it("with skip_large_traces, lists the calls of a trace larger than limit as skipped instead of refusing", async () => {
    const res = await callsUsage({ call_ids: ["a1", "root", "other", "nope"], limit: 3, skip_large_traces: true, include_costs: true });
    expect(Object.keys(res.call_usage).sort()).toEqual(["nope", "other"]);
    expectUsage(res.call_usage.other, expected("other", true));
    expect(res.call_usage.nope).toEqual({});
    expect(res.skipped_call_ids).toEqual(["a1", "root"]);
    expect(res.unfinished_call_ids).toEqual([]);
    expect(await callsUsage({ call_ids: ["other"], skip_large_traces: true })).toEqual({ call_usage: { other: expected("other", false) }, unfinished_call_ids: [], skipped_call_ids: [] });
    expect("skipped_call_ids" in (await callsUsage({ call_ids: ["other"] }))).toBe(false);
  });

  it("refuses a trace larger than limit with 413, bad input with 422, another entity with 403", async () => {
    const big = await api.post("/calls/usage", { project_id: P, call_ids: ["a1"], limit: 3 });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { detail: string }).detail).toContain("limit");
    expect((await callsUsage({ call_ids: ["other"], limit: 1 })).call_usage.other!["gpt-4o"]!.prompt_tokens).toBe(42);
    for (const body of [{ call_ids: "root" }, { call_ids: [""] }, { call_ids: ["root"], limit: 0 }, { call_ids: ["root"], include_costs: "yes" }]) {
      expect((await api.post("/calls/usage", { project_id: P, ...body })).status).toBe(422);
    }
    expect((await client(service.url, KEY_OTHER).post("/calls/usage", { project_id: P, call_ids: ["root"] })).status).toBe(403);
  });
});

describe("/trace/usage", () => {
  const traceUsage = (body: Record<string, unknown>) => api.json<UsageRes>("/trace/usage", { project_id: P, ...body });

  it("answers every call the filter matches, each with its descendants rolled up", async () => {
    const res = await traceUsage({ filter: { trace_ids: ["t1"] } });
    expect(Object.keys(res.call_usage).sort()).toEqual(TREE.filter((n) => n.trace === "t1").map((n) => n.id).sort());
    for (const n of TREE.filter((n) => n.trace === "t1")) expectUsage(res.call_usage[n.id], expected(n.id, false));
    expect(res.unfinished_call_ids).toEqual(["a2", "b"]);
  });

  it("takes a query; descendants count even when they do not match", async () => {
    const res = await traceUsage({ query: { $expr: { $in: [{ $getField: "op_name" }, [{ $literal: "op-b" }, { $literal: "op-other" }]] } }, include_costs: true });
    expect(Object.keys(res.call_usage).sort()).toEqual(["b", "other"]);
    expectUsage(res.call_usage.b, expected("b", true));
    expectUsage(res.call_usage.other, expected("other", true));
    expect(res.unfinished_call_ids).toEqual(["b"]);
    const roots = await traceUsage({ filter: { trace_roots_only: true } });
    expect(Object.keys(roots.call_usage).sort()).toEqual(["other", "root"]);
    expectUsage(roots.call_usage.root, expected("root", false));
  });

  it("answers nothing when nothing matches, and 413 beyond the limit", async () => {
    expect(await traceUsage({ filter: { trace_ids: ["none"] } })).toEqual({ call_usage: {}, unfinished_call_ids: [] });
    expect((await api.post("/trace/usage", { project_id: P, filter: { trace_ids: ["t1"] }, limit: 5 })).status).toBe(413);
    expect((await api.post("/trace/usage", { project_id: P, query: { $expr: { $eq: [{ $getField: "nope" }, { $literal: 1 }] } } })).status).toBe(422);
  });
});
