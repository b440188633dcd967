import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { storeOn } from "../support/database.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { ownUsageSql } from "../../services/store/usage/ownUsage.js";
import { iso, serviceForFile, waitStored } from "../support/service.js";

/**
 * ownUsageSql on the real ClickHouse: calls written through /call/upsert_batch, the own
 * usage of each read back exactly, for each kind of writer and the edges of the rule.
 */

const service = serviceForFile();
const api = service.api;
let store: ClickHouseStore;
const T0 = Date.UTC(2025, 4, 1, 12);

type Usage = Record<string, Record<string, number | string | null>>;
interface Spec {
  id: string;
  parent?: string;
  /** attributes.weave.source */
  source?: string;
  attributes?: Record<string, unknown>;
  usage?: Usage;
  running?: boolean;
}

const weave = (source: string) => ({ weave: { client_version: "0.10.0", source } });

async function write(project: string, specs: Spec[]): Promise<void> {
  const batch = specs.flatMap((s, i) => [
    {
      mode: "start",
      req: { start: { project_id: project, id: s.id, op_name: `op-${s.id}`, trace_id: "t", parent_id: s.parent ?? null, started_at: iso(T0 + i), attributes: s.attributes ?? (s.source ? weave(s.source) : {}), inputs: {} } },
    },
    ...(s.running ? [] : [{ mode: "end", req: { end: { project_id: project, id: s.id, ended_at: iso(T0 + 1000 - i), summary: s.usage ? { usage: s.usage } : {} } } }]),
  ]);
  await api.json("/call/upsert_batch", { batch });
  await waitStored(service.url); // read below straight from the store, not through the API
}

type Row = { id: string; model: string; requests: number; prompt_tokens: number; completion_tokens: number; total_tokens: number; started_at?: number };

/** Own usage rows of the project's calls (all wanted unless `wanted` says otherwise), as numbers. */
async function own(project: string, wanted: (pb: ParamBuilder) => string = () => "1"): Promise<Row[]> {
  const pb = new ParamBuilder();
  const sql = ownUsageSql({ table: "calls FINAL", where: `project_id = ${pb.str(project)}`, wanted: wanted(pb), carry: {} }, pb);
  const rows = await store.rows<Record<string, string | number>>("test_own_usage", { sql: `${sql}\nORDER BY id, model`, params: pb.params });
  return rows.map((r) => ({
    id: String(r.id), model: String(r.model),
    requests: Number(r.requests), prompt_tokens: Number(r.prompt_tokens), completion_tokens: Number(r.completion_tokens), total_tokens: Number(r.total_tokens),
  }));
}

const row = (id: string, model: string, requests: number, prompt: number, completion: number, total = prompt + completion): Row => ({
  id, model, requests, prompt_tokens: prompt, completion_tokens: completion, total_tokens: total,
});

beforeAll(async () => {
  store = await storeOn(service.database);
});
afterAll(async () => {
  await store.close();
});

describe("ownUsageSql", () => {
  it("TypeScript SDK: a summary less its direct children's summaries, per model and figure", async () => {
    // Spent: r 10/1 (m), a 4/1 (m), a1 10/2 (m) and 3/3 (n), b 5/0 (m). Summaries as the SDK rolls them up.
    await write("acme/own-js", [
      { id: "r", source: "js-sdk", usage: { m: { requests: 4, prompt_tokens: 29, completion_tokens: 4, total_tokens: 33 }, n: { requests: 1, prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } } },
      { id: "a", parent: "r", source: "js-sdk", usage: { m: { requests: 2, prompt_tokens: 14, completion_tokens: 3, total_tokens: 17 }, n: { requests: 1, prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } } },
      { id: "a1", parent: "a", source: "js-sdk", usage: { m: { requests: 1, prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 }, n: { requests: 1, prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } } },
      { id: "b", parent: "r", source: "js-sdk", usage: { m: { requests: 1, prompt_tokens: 5, completion_tokens: 0, total_tokens: 5 } } },
      { id: "c", parent: "r", source: "js-sdk" },
    ]);
    expect(await own("acme/own-js")).toEqual([row("a", "m", 1, 4, 1), row("a1", "m", 1, 10, 2), row("a1", "n", 1, 3, 3), row("b", "m", 1, 5, 0), row("r", "m", 1, 10, 1)]);
  });

  it("Python SDK: a parent's summary is its children's sum, so it spent nothing itself", async () => {
    await write("acme/own-py", [
      { id: "r", source: "python-sdk", usage: { m: { requests: 3, prompt_tokens: 30, completion_tokens: 6, total_tokens: 36 } } },
      { id: "s", parent: "r", source: "python-sdk", usage: { m: { requests: 2, prompt_tokens: 20, completion_tokens: 4, total_tokens: 24 } } },
      { id: "s1", parent: "s", source: "python-sdk", usage: { m: { requests: 1, prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 } } },
      { id: "s2", parent: "s", source: "python-sdk", usage: { m: { requests: 1, prompt_tokens: 8, completion_tokens: 3, total_tokens: 11 } } },
      { id: "l", parent: "r", source: "python-sdk", usage: { m: { requests: 1, prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 } } },
    ]);
    expect(await own("acme/own-py")).toEqual([row("l", "m", 1, 10, 2), row("s1", "m", 1, 12, 1), row("s2", "m", 1, 8, 3)]);
  });

  it("OTLP spans and plain API calls: each summary is the call's own, children are not subtracted", async () => {
    await write("acme/own-plain", [
      { id: "r", usage: { m: { requests: 1, prompt_tokens: 10, completion_tokens: 1 } } },
      { id: "a", parent: "r", usage: { m: { requests: 1, prompt_tokens: 20, completion_tokens: 2 } } },
      { id: "a1", parent: "a", attributes: { otel: { attributes: { "weave.source": "js-sdk" } } }, usage: { m: { prompt_tokens: 30 } } },
      // Only attributes.weave.source names an SDK: any other value or place is a plain writer.
      { id: "x", parent: "r", attributes: { weave: { source: "js-sdk-fork" }, source: "js-sdk" }, usage: { m: { prompt_tokens: 1 } } },
      { id: "x1", parent: "x", usage: { m: { prompt_tokens: 1 } } },
      // A plain call's SDK children are not subtracted from it either.
      { id: "y", parent: "r", usage: { m: { prompt_tokens: 4 } } },
      { id: "y1", parent: "y", source: "js-sdk", usage: { m: { prompt_tokens: 3 } } },
    ]);
    expect(await own("acme/own-plain")).toEqual([
      row("a", "m", 1, 20, 2), row("a1", "m", 0, 30, 0), row("r", "m", 1, 10, 1), row("x", "m", 0, 1, 0), row("x1", "m", 0, 1, 0), row("y", "m", 0, 4, 0), row("y1", "m", 0, 3, 0),
    ]);
  });

  it("never goes below zero, per figure: a late child the SDK did not roll in, a child's model the parent lacks", async () => {
    await write("acme/own-clamp", [
      // p spent 10/1 itself and rolled in k1 (5/5); k2 (7/3 of m, 2/2 of n) ended after p.
      { id: "p", source: "js-sdk", usage: { m: { requests: 2, prompt_tokens: 15, completion_tokens: 6, total_tokens: 21 } } },
      { id: "k1", parent: "p", source: "js-sdk", usage: { m: { requests: 1, prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 } } },
      { id: "k2", parent: "p", source: "js-sdk", usage: { m: { requests: 1, prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 }, n: { requests: 1, prompt_tokens: 2, completion_tokens: 2 } } },
    ]);
    // p: requests 2−2 = 0, prompt 15−12 = 3, completion 6−8 → 0, total 21−20 = 1; no row for n.
    expect(await own("acme/own-clamp")).toEqual([row("k1", "m", 1, 5, 5), row("k2", "m", 1, 7, 3), row("k2", "n", 1, 2, 2), row("p", "m", 0, 3, 0, 1)]);
  });

  it("reads each figure as pricing.ts does before subtracting: prompt_tokens else input_tokens, total else their sum", async () => {
    await write("acme/own-names", [
      { id: "p", source: "js-sdk", usage: { m: { input_tokens: 9, output_tokens: 4, requests: 2 } } },
      { id: "k", parent: "p", source: "js-sdk", usage: { m: { prompt_tokens: 6, input_tokens: 100, completion_tokens: null, output_tokens: 1, requests: 1 } } },
    ]);
    expect(await own("acme/own-names")).toEqual([row("k", "m", 1, 6, 1), row("p", "m", 1, 3, 3)]);
  });

  it("subtracts children that are not wanted, deleted or not, and not the ones still running", async () => {
    await write("acme/own-wanted", [
      { id: "p", source: "python-sdk", usage: { m: { requests: 2, prompt_tokens: 20, completion_tokens: 2 } } },
      { id: "k1", parent: "p", source: "python-sdk", usage: { m: { requests: 1, prompt_tokens: 12, completion_tokens: 1 } } },
      { id: "k2", parent: "p", source: "python-sdk", usage: { m: { requests: 1, prompt_tokens: 8, completion_tokens: 1 } } },
      { id: "k3", parent: "p", source: "python-sdk", running: true },
    ]);
    expect(await own("acme/own-wanted", (pb) => `id = ${pb.str("p")}`)).toEqual([]);
    await api.json("/calls/delete", { project_id: "acme/own-wanted", call_ids: ["k2"] });
    await waitStored(service.url);
    const notDeleted = (pb: ParamBuilder) => `id NOT IN (SELECT id FROM call_deletions WHERE project_id = ${pb.str("acme/own-wanted")})`;
    expect(await own("acme/own-wanted", notDeleted)).toEqual([row("k1", "m", 1, 12, 1)]);
  });

  it("is right once children arrive after their parent's summary", async () => {
    const P = "acme/own-late";
    await write(P, [{ id: "p", source: "js-sdk", usage: { m: { requests: 3, prompt_tokens: 30, completion_tokens: 3 } } }]);
    expect(await own(P)).toEqual([row("p", "m", 3, 30, 3)]);
    await api.json("/call/upsert_batch", {
      batch: [
        { mode: "end", req: { end: { project_id: P, id: "k", ended_at: iso(T0 + 500), summary: { usage: { m: { requests: 2, prompt_tokens: 25, completion_tokens: 1 } } } } } },
        { mode: "start", req: { start: { project_id: P, id: "k", op_name: "op-k", trace_id: "t", parent_id: "p", started_at: iso(T0 + 10), attributes: weave("js-sdk"), inputs: {} } } },
      ],
    });
    await waitStored(service.url);
    expect(await own(P)).toEqual([row("k", "m", 2, 25, 1), row("p", "m", 1, 5, 2)]);
  });

  it("carries the wanted call's columns, not its children's", async () => {
    const pb = new ParamBuilder();
    const sql = ownUsageSql({ table: "calls FINAL", where: `project_id = ${pb.str("acme/own-js")}`, wanted: `id IN ${pb.inStrings(["r", "a"])}`, carry: { op: "op_name", at: "started_at" } }, pb);
    const rows = await store.rows<Record<string, string | number>>("test_own_usage", { sql: `${sql}\nORDER BY id, model`, params: pb.params });
    expect(rows.map((r) => [r.id, r.model, r.op, Number(r.at)])).toEqual([["a", "m", "op-a", (T0 + 1) * 1000], ["r", "m", "op-r", T0 * 1000]]);
  });
});
