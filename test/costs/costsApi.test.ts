import { beforeAll, describe, expect, it } from "vitest";
import { client, iso, KEY_OTHER, serviceForFile } from "../support/service.js";

/** /cost/create, /cost/query, /cost/purge through HTTP on a fresh database. */

const service = serviceForFile();
const api = service.api;
const P = "acme/costs-api";
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Cost {
  id: string;
  llm_id: string;
  prompt_token_cost: number;
  completion_token_cost: number;
  prompt_token_cost_unit: string;
  completion_token_cost_unit: string;
  effective_date: string;
  provider_id: string;
}

const query = (body: Record<string, unknown>) => api.json<{ results: Partial<Cost>[] }>("/cost/query", { project_id: P, ...body });
const expr = (e: unknown) => ({ $expr: e });
const field = (f: string) => ({ $getField: f });
const lit = (v: unknown) => ({ $literal: v });

const ids: Record<string, string> = {};

beforeAll(async () => {
  const res = await api.json<{ ids: [string, string][] }>("/cost/create", {
    project_id: P,
    costs: {
      "model-a": { prompt_token_cost: 0.001, completion_token_cost: 0.002, effective_date: "2025-01-01T00:00:00Z" },
      "model-b": { prompt_token_cost: 0.003, completion_token_cost: 0.004, prompt_token_cost_unit: "EUR", completion_token_cost_unit: "EUR", effective_date: "2025-02-01T00:00:00.123456Z", provider_id: "acme-ai" },
      "model-c": { prompt_token_cost: 0.0005, completion_token_cost: 0.0001, effective_date: "2025-03-01T00:00:00Z" },
    },
  });
  expect(res.ids.map(([llm]) => llm)).toEqual(["model-a", "model-b", "model-c"]);
  for (const [llm, id] of res.ids) ids[llm] = id;
  // A second, later price for model-a.
  const later = await api.json<{ ids: [string, string][] }>("/cost/create", {
    project_id: P,
    costs: { "model-a": { prompt_token_cost: 0.0009, completion_token_cost: 0.0019, effective_date: "2025-06-01T00:00:00Z" } },
  });
  ids["model-a-later"] = later.ids[0]![1];
});

describe("/cost/create", () => {
  it("answers [llm_id, id] pairs with UUIDv7 ids, readable at once with defaults filled", async () => {
    for (const id of Object.values(ids)) expect(id).toMatch(UUID_V7);
    const { results } = await query({ query: expr({ $eq: [field("id"), lit(ids["model-a"])] }) });
    expect(results).toEqual([
      {
        id: ids["model-a"], llm_id: "model-a", prompt_token_cost: 0.001, completion_token_cost: 0.002,
        prompt_token_cost_unit: "USD", completion_token_cost_unit: "USD", effective_date: "2025-01-01T00:00:00.000000Z", provider_id: "default",
      },
    ]);
    const [b] = (await query({ query: expr({ $eq: [field("llm_id"), lit("model-b")] }) })).results;
    expect(b).toMatchObject({ prompt_token_cost_unit: "EUR", completion_token_cost_unit: "EUR", provider_id: "acme-ai", effective_date: "2025-02-01T00:00:00.123456Z" });
  });

  it("defaults effective_date to now", async () => {
    const before = Date.now();
    const res = await api.json<{ ids: [string, string][] }>("/cost/create", { project_id: "acme/costs-now", costs: { m: { prompt_token_cost: 1, completion_token_cost: 2 } } });
    const { results } = await api.json<{ results: Cost[] }>("/cost/query", { project_id: "acme/costs-now" });
    expect(results.map((r) => r.id)).toEqual([res.ids[0]![1]]);
    const at = Date.parse(results[0]!.effective_date);
    expect(at).toBeGreaterThanOrEqual(before - 1);
    expect(at).toBeLessThanOrEqual(Date.now() + 1);
  });

  it("refuses bad input with 422 and writes nothing", async () => {
    for (const costs of [{}, { m: { prompt_token_cost: -1, completion_token_cost: 1 } }, { m: { prompt_token_cost: 1 } }, { "": { prompt_token_cost: 1, completion_token_cost: 1 } }, { m: { prompt_token_cost: 1, completion_token_cost: 1, effective_date: "yesterday" } }]) {
      const res = await api.post("/cost/create", { project_id: "acme/costs-bad", costs });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc[0]).toBe("body");
    }
    expect((await api.json<{ results: unknown[] }>("/cost/query", { project_id: "acme/costs-bad" })).results).toEqual([]);
  });

  it("answers 403 for another entity's project and writes nothing", async () => {
    const other = client(service.url, KEY_OTHER);
    expect((await other.post("/cost/create", { project_id: "acme/costs-403", costs: { m: { prompt_token_cost: 1, completion_token_cost: 1 } } })).status).toBe(403);
    expect((await other.post("/cost/query", { project_id: P })).status).toBe(403);
    expect((await other.post("/cost/purge", { project_id: P, query: expr({ $eq: [lit(1), lit(1)] }) })).status).toBe(403);
    expect((await api.json<{ results: unknown[] }>("/cost/query", { project_id: "acme/costs-403" })).results).toEqual([]);
    expect((await query({})).results).toHaveLength(4);
  });
});

describe("/cost/query", () => {
  it("lists the project's own prices (not the defaults), by model then newest first", async () => {
    const { results } = await query({ fields: ["llm_id", "effective_date"] });
    expect(results).toEqual([
      { llm_id: "model-a", effective_date: "2025-06-01T00:00:00.000000Z" },
      { llm_id: "model-a", effective_date: "2025-01-01T00:00:00.000000Z" },
      { llm_id: "model-b", effective_date: "2025-02-01T00:00:00.123456Z" },
      { llm_id: "model-c", effective_date: "2025-03-01T00:00:00.000000Z" },
    ]);
  });

  it("returns only the asked fields, all when none", async () => {
    const { results } = await query({ fields: ["id", "prompt_token_cost"], limit: 1 });
    expect(Object.keys(results[0]!).sort()).toEqual(["id", "prompt_token_cost"]);
    const all = await query({ limit: 1, fields: [] });
    expect(Object.keys(all.results[0]!).sort()).toEqual(
      ["completion_token_cost", "completion_token_cost_unit", "effective_date", "id", "llm_id", "prompt_token_cost", "prompt_token_cost_unit", "provider_id"],
    );
  });

  it("sorts, limits and offsets", async () => {
    const byPrompt = await query({ fields: ["prompt_token_cost"], sort_by: [{ field: "prompt_token_cost", direction: "desc" }] });
    expect(byPrompt.results.map((r) => r.prompt_token_cost)).toEqual([0.003, 0.001, 0.0009, 0.0005]);
    const page = await query({ fields: ["prompt_token_cost"], sort_by: [{ field: "prompt_token_cost", direction: "asc" }], limit: 2, offset: 1 });
    expect(page.results.map((r) => r.prompt_token_cost)).toEqual([0.0009, 0.001]);
    const tail = await query({ fields: ["prompt_token_cost"], sort_by: [{ field: "prompt_token_cost", direction: "asc" }], offset: 3 });
    expect(tail.results.map((r) => r.prompt_token_cost)).toEqual([0.003]);
    const byDate = await query({ fields: ["llm_id"], sort_by: [{ field: "effective_date", direction: "asc" }] });
    expect(byDate.results.map((r) => r.llm_id)).toEqual(["model-a", "model-b", "model-c", "model-a"]);
  });

  it("filters with the query expression over every kind of field", async () => {
    const llms = async (e: unknown) => (await query({ fields: ["llm_id"], query: expr(e), sort_by: [{ field: "effective_date", direction: "asc" }] })).results.map((r) => r.llm_id);
    expect(await llms({ $gt: [field("prompt_token_cost"), lit(0.00095)] })).toEqual(["model-a", "model-b"]);
    expect(await llms({ $gte: [field("effective_date"), lit("2025-02-01T00:00:00.123456Z")] })).toEqual(["model-b", "model-c", "model-a"]);
    expect(await llms({ $gt: [field("effective_date"), lit(Date.UTC(2025, 1, 1) / 1000)] })).toEqual(["model-b", "model-c", "model-a"]);
    expect(await llms({ $in: [field("id"), [lit(ids["model-c"]), lit(ids["model-a-later"])]] })).toEqual(["model-c", "model-a"]);
    expect(await llms({ $contains: { input: field("provider_id"), substr: lit("ACME"), case_insensitive: true } })).toEqual(["model-b"]);
    expect(await llms({ $and: [{ $eq: [field("llm_id"), lit("model-a")] }, { $not: [{ $gt: [field("effective_date"), lit("2025-03-01")] }] }] })).toEqual(["model-a"]);
    expect(await llms({ $or: [{ $eq: [field("prompt_token_cost_unit"), lit("EUR")] }, { $eq: [{ $convert: { input: field("completion_token_cost"), to: "double" } }, lit(0.0001)] }] })).toEqual(["model-b", "model-c"]);
    expect(await llms({ $gt: [field("completion_token_cost"), field("prompt_token_cost")] })).toEqual(["model-a", "model-b", "model-a"]);
    expect(await llms({ $eq: [field("llm_id"), lit(null)] })).toEqual([]);
  });

  it("takes the one compiler's conversions of typed fields: dates to seconds, existence, null", async () => {
    const llms = async (e: unknown) => (await query({ fields: ["llm_id"], query: expr(e), sort_by: [{ field: "effective_date", direction: "asc" }] })).results.map((r) => r.llm_id);
    const feb = Date.UTC(2025, 1, 1) / 1000;
    expect(await llms({ $gt: [{ $convert: { input: field("effective_date"), to: "int" } }, lit(feb)] })).toEqual(["model-c", "model-a"]);
    expect(await llms({ $gte: [{ $convert: { input: field("effective_date"), to: "double" } }, lit(feb + 0.123456)] })).toEqual(["model-b", "model-c", "model-a"]);
    expect(await llms({ $and: [{ $convert: { input: field("provider_id"), to: "exists" } }, { $eq: [field("llm_id"), lit("model-c")] }] })).toEqual(["model-c"]);
    expect(await llms({ $not: [{ $eq: [field("provider_id"), lit(null)] }] })).toEqual(["model-a", "model-b", "model-c", "model-a"]);
    for (const refused of [
      { $and: [field("llm_id")] },
      { $contains: { input: field("prompt_token_cost"), substr: lit("0") } },
      { $eq: [{ $convert: { input: field("llm_id"), to: "double" } }, lit(1)] },
      { $gt: [field("llm_id"), field("prompt_token_cost")] },
    ]) {
      expect((await api.post("/cost/query", { project_id: P, query: expr(refused) })).status, JSON.stringify(refused)).toBe(422);
    }
  });

  it("refuses unknown fields and ill-typed comparisons with 422", async () => {
    const bad = [
      { fields: ["nope"] },
      { sort_by: [{ field: "summary", direction: "asc" }] },
      { query: expr({ $eq: [field("inputs.x"), lit(1)] }) },
      { query: expr({ $gt: [field("llm_id"), lit(3)] }) },
      { query: expr({ $eq: [field("prompt_token_cost"), lit("cheap")] }) },
      { query: { $expr: { $bogus: [] } } },
      { limit: -1 },
    ];
    for (const body of bad) {
      const res = await api.post("/cost/query", { project_id: P, ...body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      const detail = ((await res.json()) as { detail: { loc: unknown[]; msg: string }[] }).detail;
      expect(detail[0]!.loc[0]).toBe("body");
    }
  });
});

describe("/cost/purge", () => {
  it("requires a query (422) and deletes only what it matches, in this project only", async () => {
    const P2 = "acme/costs-purge";
    await api.json("/cost/create", { project_id: P2, costs: { x: { prompt_token_cost: 1, completion_token_cost: 1 }, y: { prompt_token_cost: 2, completion_token_cost: 2 } } });
    await api.json("/cost/create", { project_id: "acme/costs-purge-other", costs: { x: { prompt_token_cost: 1, completion_token_cost: 1 } } });
    const missing = await api.post("/cost/purge", { project_id: P2 });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "query"]);
    expect((await api.post("/cost/purge", { project_id: P2, query: expr({ $eq: [field("nope"), lit(1)] }) })).status).toBe(422);
    expect((await api.json<{ results: unknown[] }>("/cost/query", { project_id: P2 })).results).toHaveLength(2);

    expect(await api.json("/cost/purge", { project_id: P2, query: expr({ $eq: [field("llm_id"), lit("x")] }) })).toEqual({});
    const left = await api.json<{ results: Cost[] }>("/cost/query", { project_id: P2 });
    expect(left.results.map((r) => r.llm_id)).toEqual(["y"]);
    expect((await api.json<{ results: unknown[] }>("/cost/query", { project_id: "acme/costs-purge-other" })).results).toHaveLength(1);
    // Purging again is a no-op; a new price for the purged model is independent.
    expect(await api.json("/cost/purge", { project_id: P2, query: expr({ $eq: [field("llm_id"), lit("x")] }) })).toEqual({});
    await api.json("/cost/create", { project_id: P2, costs: { x: { prompt_token_cost: 3, completion_token_cost: 3, effective_date: iso(Date.UTC(2025, 0, 1)) } } });
    const again = await api.json<{ results: Cost[] }>("/cost/query", { project_id: P2, fields: ["llm_id", "prompt_token_cost"] });
    expect(again.results).toEqual([{ llm_id: "x", prompt_token_cost: 3 }, { llm_id: "y", prompt_token_cost: 2 }]);
  });
});
