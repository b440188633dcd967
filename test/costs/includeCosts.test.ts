import { beforeAll, describe, expect, it } from "vitest";
import { PER_MODEL_FIGURES } from "../../services/store/costs/costFields.js";
import { loadDefaultPriceFile } from "../../services/store/costs/defaultPrices.js";
import { iso, serviceForFile } from "../support/service.js";

/**
 * include_costs on /calls/stream_query and /call/read, and the cost fields for filters and
 * sorts, against figures computed here from the prices the test sets and the default file.
 */

type Json = Record<string, unknown>;
type Call = Json & { id: string; summary: Json & { weave: Json & { costs?: Record<string, Json> } } };

const service = serviceForFile();
const api = service.api;
const P = "acme/include-costs";
const day = (y: number, m: number, d: number) => Date.UTC(y, m - 1, d);

const defaults = loadDefaultPriceFile().prices;
const defaultPrice = (llm: string, atMs: number) =>
  defaults.filter((p) => p.llm_id === llm && Date.parse(p.effective_date) <= atMs).sort((a, b) => Date.parse(b.effective_date) - Date.parse(a.effective_date))[0];

// Project prices for gpt-4o: P1 from 2025-03-01, P2 from 2025-06-01 (per token).
const P1 = { prompt: 1e-6, completion: 2e-6, at: day(2025, 3, 1) };
const P2 = { prompt: 5e-7, completion: 1.1e-6, at: day(2025, 6, 1) };

interface Spec {
  id: string;
  at: number;
  usage?: Record<string, Json>;
  running?: boolean;
}
const CALLS: Spec[] = [
  { id: "ancient", at: day(2024, 1, 1), usage: { "gpt-4o": { prompt_tokens: 100, completion_tokens: 10 } } },
  { id: "before-project", at: day(2025, 1, 15), usage: { "gpt-4o": { prompt_tokens: 1234, completion_tokens: 567, requests: 2 } } },
  { id: "at-p1", at: P1.at, usage: { "gpt-4o": { prompt_tokens: 1000, completion_tokens: 100 } } },
  { id: "between", at: day(2025, 4, 10), usage: { "gpt-4o": { prompt_tokens: 3333, completion_tokens: 777, requests: 1, total_tokens: 4110 }, "my-own-llm": { prompt_tokens: 5 } } },
  { id: "after", at: day(2025, 7, 1), usage: { "gpt-4o": { input_tokens: 999, output_tokens: 333 } } },
  { id: "haiku", at: day(2025, 2, 1), usage: { "claude-3-5-haiku-20241022": { input_tokens: 20000, output_tokens: 3000, requests: 1 } } },
  { id: "haiku-too-early", at: day(2024, 10, 1), usage: { "claude-3-5-haiku-20241022": { input_tokens: 1, output_tokens: 1 } } },
  { id: "both-names", at: day(2025, 4, 11), usage: { "gpt-4o": { prompt_tokens: 10, input_tokens: 99999, completion_tokens: null, output_tokens: 20 } } },
  { id: "no-usage", at: day(2025, 4, 12) },
  { id: "running", at: day(2025, 4, 13), running: true },
];

/** The price a call gets, as the test understands the rules. */
function expectedPrice(llm: string, at: number): { prompt: number; completion: number; level: string; effective: number } | null {
  if (llm === "gpt-4o") {
    const project = [P2, P1].find((p) => p.at <= at);
    if (project) return { prompt: project.prompt, completion: project.completion, level: "project", effective: project.at };
  }
  const d = defaultPrice(llm, at);
  return d ? { prompt: d.prompt_token_cost, completion: d.completion_token_cost, level: "default", effective: Date.parse(d.effective_date) } : null;
}

const num = (v: unknown): number | null => (typeof v === "number" ? v : null);

function expectedCosts(spec: Spec): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [llm, u] of Object.entries(spec.usage ?? {})) {
    const price = expectedPrice(llm, spec.at);
    if (!price) continue;
    const prompt = num(u.prompt_tokens) ?? num(u.input_tokens) ?? 0;
    const completion = num(u.completion_tokens) ?? num(u.output_tokens) ?? 0;
    out[llm] = {
      prompt_tokens: prompt,
      completion_tokens: completion,
      requests: num(u.requests) ?? 0,
      total_tokens: num(u.total_tokens) ?? prompt + completion,
      prompt_tokens_total_cost: prompt * price.prompt,
      completion_tokens_total_cost: completion * price.completion,
      prompt_token_cost: price.prompt,
      completion_token_cost: price.completion,
      prompt_token_cost_unit: "USD",
      completion_token_cost_unit: "USD",
      effective_date: iso(price.effective),
      pricing_level: price.level,
    };
  }
  return out;
}

const total = (spec: Spec) => Object.values(expectedCosts(spec)).reduce((s, c) => s + (c.prompt_tokens_total_cost as number) + (c.completion_tokens_total_cost as number), 0);

beforeAll(async () => {
  await api.json("/cost/create", { project_id: P, costs: { "gpt-4o": { prompt_token_cost: P1.prompt, completion_token_cost: P1.completion, effective_date: iso(P1.at), provider_id: "openai" } } });
  await api.json("/cost/create", { project_id: P, costs: { "gpt-4o": { prompt_token_cost: P2.prompt, completion_token_cost: P2.completion, effective_date: iso(P2.at), provider_id: "openai" } } });
  // Another project's price for the same model must not leak in.
  await api.json("/cost/create", { project_id: "acme/include-costs-other", costs: { "gpt-4o": { prompt_token_cost: 1, completion_token_cost: 1, effective_date: iso(day(2020, 1, 1)) } } });
  const batch = CALLS.flatMap((c) => [
    { mode: "start", req: { start: { project_id: P, id: c.id, op_name: "llm", trace_id: `t-${c.id}`, started_at: iso(c.at), attributes: {}, inputs: {} } } },
    ...(c.running ? [] : [{ mode: "end", req: { end: { project_id: P, id: c.id, ended_at: iso(c.at + 1000), output: null, summary: c.usage ? { usage: c.usage } : {} } } }]),
  ]);
  await api.json("/call/upsert_batch", { batch });
});

const stream = (body: Json) => api.lines<Call>("/calls/stream_query", { project_id: P, ...body });

describe("include_costs", () => {
  it("prices each model with the latest price effective at the call's start, project before default, exactly", async () => {
    const calls = await stream({ include_costs: true });
    expect(calls.map((c) => c.id).sort()).toEqual(CALLS.map((c) => c.id).sort());
    for (const spec of CALLS) {
      const call = calls.find((c) => c.id === spec.id)!;
      const want = expectedCosts(spec);
      if (Object.keys(want).length === 0) {
        expect(call.summary.weave.costs, spec.id).toBeUndefined();
        continue;
      }
      expect(Object.keys(call.summary.weave.costs!).sort(), spec.id).toEqual(Object.keys(want).sort());
      for (const [llm, cost] of Object.entries(want)) expect(call.summary.weave.costs![llm], `${spec.id} ${llm}`).toMatchObject(cost);
    }
    const between = calls.find((c) => c.id === "between")!.summary.weave.costs!["gpt-4o"]!;
    expect(between).toMatchObject({ provider_id: "openai", pricing_level: "project", pricing_level_id: P, created_by: "alice" });
    const haiku = calls.find((c) => c.id === "haiku")!.summary.weave.costs!["claude-3-5-haiku-20241022"]!;
    expect(haiku).toMatchObject({ provider_id: "anthropic", pricing_level: "default", pricing_level_id: "default", prompt_tokens_total_cost: 20000 * 8e-7, completion_tokens_total_cost: 3000 * 4e-6 });
  });

  it("adds nothing without the flag, and keeps status and latency beside the costs", async () => {
    const [plain] = await stream({ filter: { call_ids: ["between"] } });
    expect(plain!.summary.weave.costs).toBeUndefined();
    const [priced] = await stream({ filter: { call_ids: ["between"] }, include_costs: true });
    expect(priced!.summary.weave).toMatchObject({ status: "success", latency_ms: 1000, trace_name: "llm" });
    expect(priced!.summary.usage).toEqual(CALLS.find((c) => c.id === "between")!.usage);
  });

  it("leaves calls alone when the asked columns exclude the summary", async () => {
    const [call] = await stream({ filter: { call_ids: ["between"] }, include_costs: true, columns: ["inputs"] });
    expect(call!.summary).toBeUndefined();
  });

  it("works on /call/read", async () => {
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "after", include_costs: true });
    expect(call.summary.weave.costs).toEqual(expect.objectContaining({ "gpt-4o": expect.objectContaining(expectedCosts(CALLS.find((c) => c.id === "after")!)["gpt-4o"]) }));
    const plain = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "after" });
    expect(plain.call.summary.weave.costs).toBeUndefined();
  });

  it("falls back to the default price once the project's price is purged", async () => {
    const Q = "acme/include-costs-purge";
    await api.json("/cost/create", { project_id: Q, costs: { "gpt-4o-mini": { prompt_token_cost: 1e-3, completion_token_cost: 2e-3, effective_date: iso(day(2025, 1, 1)) } } });
    await api.json("/call/upsert_batch", { batch: [
      { mode: "start", req: { start: { project_id: Q, id: "m", op_name: "llm", trace_id: "t", started_at: iso(day(2025, 5, 1)), attributes: {}, inputs: {} } } },
      { mode: "end", req: { end: { project_id: Q, id: "m", ended_at: iso(day(2025, 5, 1) + 5), summary: { usage: { "gpt-4o-mini": { prompt_tokens: 10, completion_tokens: 10 } } } } } },
    ] });
    const read = async () => (await api.json<{ call: Call }>("/call/read", { project_id: Q, id: "m", include_costs: true })).call.summary.weave.costs!["gpt-4o-mini"]!;
    expect(await read()).toMatchObject({ pricing_level: "project", prompt_tokens_total_cost: 10 * 1e-3 });
    await api.json("/cost/purge", { project_id: Q, query: { $expr: { $eq: [{ $getField: "llm_id" }, { $literal: "gpt-4o-mini" }] } } });
    expect(await read()).toMatchObject({ pricing_level: "default", prompt_token_cost: 1.5e-7, prompt_tokens_total_cost: 10 * 1.5e-7 });
  });
});

describe("cost fields in filters and sorts", () => {
  const ids = (calls: Call[]) => calls.map((c) => c.id);
  const byTotal = [...CALLS].filter((c) => total(c) > 0).sort((a, b) => total(b) - total(a));

  it("sorts by summary.weave.costs_total, calls without a priced model at 0", async () => {
    const calls = await stream({ sort_by: [{ field: "summary.weave.costs_total", direction: "desc" }] });
    const priced = ids(calls).slice(0, byTotal.length);
    expect(priced).toEqual(byTotal.map((c) => c.id));
    expect(ids(calls).slice(byTotal.length).sort()).toEqual(CALLS.filter((c) => total(c) === 0).map((c) => c.id).sort());
  });

  it("filters by summary.weave.costs_total", async () => {
    const threshold = (total(byTotal[1]!) + total(byTotal[2]!)) / 2;
    const calls = await stream({ query: { $expr: { $gt: [{ $getField: "summary.weave.costs_total" }, { $literal: threshold }] } } });
    expect(ids(calls).sort()).toEqual([byTotal[0]!.id, byTotal[1]!.id].sort());
    const zero = await stream({ query: { $expr: { $eq: [{ $getField: "summary.weave.costs_total" }, { $literal: 0 }] } } });
    expect(ids(zero).sort()).toEqual(CALLS.filter((c) => total(c) === 0).map((c) => c.id).sort());
  });

  it("filters and sorts by a per-model figure; NULL (no usage or no price) sorts last and matches nothing", async () => {
    const path = "summary.weave.costs.gpt-4o.prompt_tokens_total_cost";
    const gpt = CALLS.filter((c) => expectedCosts(c)["gpt-4o"]);
    const figure = (c: Spec) => expectedCosts(c)["gpt-4o"]!.prompt_tokens_total_cost as number;
    const calls = await stream({ sort_by: [{ field: path, direction: "asc" }] });
    expect(ids(calls).slice(0, gpt.length)).toEqual([...gpt].sort((a, b) => figure(a) - figure(b)).map((c) => c.id));
    const rates = await stream({ query: { $expr: { $eq: [{ $getField: "summary.weave.costs.gpt-4o.prompt_token_cost" }, { $literal: P1.prompt }] } } });
    expect(ids(rates).sort()).toEqual(["at-p1", "between", "both-names"]);
    const dotted = await stream({ query: { $expr: { $gt: [{ $getField: "summary.weave.costs.claude-3-5-haiku-20241022.completion_tokens_total_cost" }, { $literal: 0 }] } } });
    expect(ids(dotted)).toEqual(["haiku"]);
  });

  it("$eq on each figure a call shows finds the call (every number of summary.weave.costs[<model>])", async () => {
    const Q = "acme/include-costs-forms";
    const at = day(2025, 5, 1);
    await api.json("/cost/create", { project_id: Q, costs: { "gpt-4o": { prompt_token_cost: 3e-6, completion_token_cost: 1.2e-5, effective_date: iso(day(2025, 1, 1)) } } });
    const forms: Json[] = [
      { prompt_tokens: 5, completion_tokens: 7 },
      { input_tokens: 1000, output_tokens: 3 },
      { prompt_tokens: null, input_tokens: 12, completion_tokens: 0, output_tokens: 4 },
      { input_tokens: 123456789, requests: 2, total_tokens: 5 },
      { prompt_tokens: 3, completion_tokens: 9007199254740991 },
    ];
    await api.json("/call/upsert_batch", { batch: forms.flatMap((usage, i) => [
      { mode: "start", req: { start: { project_id: Q, id: `f${i}`, op_name: "llm", trace_id: `t-f${i}`, started_at: iso(at + i), attributes: {}, inputs: {} } } },
      { mode: "end", req: { end: { project_id: Q, id: `f${i}`, ended_at: iso(at + i + 5), summary: { usage: { "gpt-4o": usage } } } } },
    ]) });
    const calls = await api.lines<Call>("/calls/stream_query", { project_id: Q, include_costs: true });
    expect(calls).toHaveLength(forms.length);
    for (const call of calls) {
      const cost = call.summary.weave.costs!["gpt-4o"]!;
      // Every number shown is a field; the text and dates of the price are not.
      expect(Object.keys(cost).filter((key) => typeof cost[key] === "number").sort()).toEqual([...PER_MODEL_FIGURES].sort());
      for (const figure of PER_MODEL_FIGURES) {
        const field = `summary.weave.costs.gpt-4o.${figure}`;
        const found = await api.lines<Call>("/calls/stream_query", { project_id: Q, query: { $expr: { $eq: [{ $getField: field }, { $literal: cost[figure] }] } } });
        expect({ id: call.id, figure, found: found.map((c) => c.id) }).toEqual({ id: call.id, figure, found: expect.arrayContaining([call.id]) });
      }
    }
  });

  it("refuses unknown cost paths with 422", async () => {
    for (const field of ["summary.weave.costs", "summary.weave.costs.gpt-4o", "summary.weave.costs.gpt-4o.price", "summary.weave.costs_sum"]) {
      const res = await api.post("/calls/stream_query", { project_id: P, sort_by: [{ field, direction: "asc" }] });
      expect(res.status, field).toBe(422);
    }
  });
});
