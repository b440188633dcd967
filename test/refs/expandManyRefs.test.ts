import { beforeAll, describe, expect, it } from "vitest";
import { MAX_EXPANDED_REFS } from "../../services/query/expandRefs.js";
import { expandedFields } from "../../services/store/calls/expandedFields.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { iso, serviceForFile } from "../support/service.js";

/**
 * `expand_columns` at a column holding more distinct refs than are resolved in the service
 * (MAX_EXPANDED_REFS): the table-row refs are resolved inside ClickHouse; filters and sorts
 * through them must give what this test computes from the rows it wrote.
 */
const P = "acme/expand-many";
const ROWS = 1500;
const service = serviceForFile();

type Row = { n: number; parity: string; label: string };
const rowOf = (i: number): Row => ({ n: i, parity: i % 2 === 0 ? "even" : "odd", label: `row-${i}` });
const callId = (i: number) => `c${String(i).padStart(4, "0")}`;

describe("expandedFields: row refs resolved inside ClickHouse", () => {
  it("binds every value (project, column, roots, tables, leaf path) as a parameter", () => {
    const pb = new ParamBuilder();
    const rows = { projectId: "a/b'c", roots: ["weave:///a/b'c/table/t1"], tables: ["t1"], leafPath: "val.q'x" };
    const field = expandedFields(new Map([["inputs.ex'ample.q", { column: "inputs.ex'ample", keys: [], values: [], rows }]])).resolve("inputs.ex'ample.q", pb, {});
    for (const value of ["b'c", "ex'ample", "q'x", "t1"]) expect(field?.sql).not.toContain(value);
    const values = Object.values(pb.params).map((p) => p.value);
    expect(values).toEqual(expect.arrayContaining(["a/b'c", "inputs.ex'ample", ["weave:///a/b'c/table/t1"], ["t1"], "val.q'x", "weave:///a/b'c/"]));
  });
});

describe("expand_columns past MAX_EXPANDED_REFS distinct row refs", () => {
  const refOf = new Map<string, string>();
  /** n of each call's example as the query must see it (absent: the field does not resolve). */
  const nOf = new Map<string, number>();

  beforeAll(async () => {
    const api = service.api;
    const rows = Array.from({ length: ROWS }, (_, i) => rowOf(i));
    const table = await api.json<{ digest: string; row_digests: string[] }>("/table/create", { table: { project_id: P, rows } });
    const dataset = await api.json<{ digest: string }>("/obj/create", {
      obj: { project_id: P, object_id: "numbers", val: { _type: "Dataset", _class_name: "Dataset", name: "numbers", rows: `weave:///${P}/table/${table.digest}` } },
    });
    const object = await api.json<{ digest: string }>("/obj/create", { obj: { project_id: P, object_id: "seven", val: { n: 7, parity: "odd" } } });
    // Even rows by a table-row ref, odd ones through the dataset, as the Weave clients write them.
    table.row_digests.forEach((digest, i) => {
      const ref = i % 2 === 0 ? `weave:///${P}/table/${table.digest}/id/${digest}` : `weave:///${P}/object/numbers:${dataset.digest}/attr/rows/id/${digest}`;
      refOf.set(callId(i), ref);
      nOf.set(callId(i), i);
    });
    refOf.set("x-object", `weave:///${P}/object/seven:${object.digest}`);
    nOf.set("x-object", 7);
    refOf.set("x-missing", `weave:///${P}/table/${table.digest}/id/no-such-row`);
    refOf.set("x-other-table", `weave:///${P}/table/${"0".repeat(64)}/id/${table.row_digests[3]}`);
    const inputs = new Map<string, unknown>([...refOf].map(([id, ref]) => [id, { example: ref }]));
    inputs.set("x-inline", { example: { n: 5, parity: "odd" } });
    nOf.set("x-inline", 5);
    const at = Date.UTC(2026, 3, 1);
    const batch = [...inputs].flatMap(([id, input], i) => [
      { mode: "start", req: { start: { project_id: P, id, trace_id: `t-${id}`, op_name: "predict", started_at: iso(at + i * 1000), attributes: {}, inputs: input } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: iso(at + i * 1000 + 500), output: null, summary: {} } } },
    ]);
    for (let from = 0; from < batch.length; from += 1000) await api.json("/call/upsert_batch", { batch: batch.slice(from, from + 1000) });
  });

  const expand_columns = ["inputs.example"];
  const ids = async (body: Record<string, unknown>) =>
    (await service.api.lines<{ id: string }>("/calls/stream_query", { project_id: P, expand_columns, columns: ["id"], ...body })).map((c) => c.id);
  const byId = [{ field: "id", direction: "asc" }];
  const field = (name: string) => ({ $getField: `inputs.example.${name}` });
  const expected = (keep: (n: number, id: string) => boolean) => [...nOf].filter(([id, n]) => keep(n, id)).map(([id]) => id).sort();

  it("holds more distinct refs than the service resolves itself", () => {
    expect(refOf.size).toBeGreaterThan(MAX_EXPANDED_REFS);
  });

  it("filters through the row refs exactly", async () => {
    const below = { $expr: { $gt: [{ $literal: 10 }, field("n")] } };
    expect(await ids({ query: below, sort_by: byId })).toEqual(expected((n) => n < 10));
    const high = { $expr: { $gte: [field("n"), { $literal: 1490 }] } };
    expect(await ids({ query: high, sort_by: byId })).toEqual(expected((n) => n >= 1490));
    const oddLow = { $expr: { $and: [{ $eq: [field("parity"), { $literal: "odd" }] }, { $gt: [{ $literal: 20 }, field("n")] }] } };
    expect(await ids({ query: oddLow, sort_by: byId })).toEqual(expected((n) => n % 2 === 1 && n < 20));
    const label = { $expr: { $eq: [field("label"), { $literal: "row-1234" }] } };
    expect(await ids({ query: label })).toEqual(["c1234"]);
  });

  it("sorts through the row refs numerically, calls without the field last", async () => {
    const sorted = Array.from(nOf).sort(([a, x], [b, y]) => x - y || a.localeCompare(b)).map(([id]) => id);
    expect(await ids({ sort_by: [{ field: "inputs.example.n", direction: "asc" }, ...byId], limit: 12 })).toEqual(sorted.slice(0, 12));
    const desc = Array.from(nOf).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)).map(([id]) => id);
    expect(await ids({ sort_by: [{ field: "inputs.example.n", direction: "desc" }, ...byId], limit: 12 })).toEqual(desc.slice(0, 12));
    const all = await ids({ sort_by: [{ field: "inputs.example.n", direction: "asc" }, ...byId] });
    expect(all.slice(0, sorted.length)).toEqual(sorted);
    expect(all.slice(sorted.length).sort()).toEqual(["x-missing", "x-other-table"]);
  });

  it("counts through the row refs in /calls/query_stats", async () => {
    const stats = await service.api.json<{ count: number }>("/calls/query_stats", {
      project_id: P,
      expand_columns,
      query: { $expr: { $gt: [field("n"), { $literal: 1000 }] } },
    });
    expect(stats).toEqual({ count: expected((n) => n > 1000).length });
  });

  it("answers the resolved rows of a page", async () => {
    const [call] = await service.api.lines<{ id: string; inputs: { example: unknown } }>("/calls/stream_query", {
      project_id: P,
      expand_columns,
      query: { $expr: { $eq: [field("n"), { $literal: 1001 }] } },
    });
    expect(call!.inputs.example).toEqual({ ...rowOf(1001), _ref: refOf.get("c1001") });
  });
});
