import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { whereClause } from "../../services/store/calls/callsQuery.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { client, iso, startTestService, type Client } from "../support/service.js";

const P = "acme/ref-filters";
const REF_A = `weave:///${P}/object/ds:aaa/attr/rows/id/r1`;
const REF_B = `weave:///${P}/object/model:bbb`;
const REF_C = `weave:///${P}/op/score:ccc`;

describe("filter.input_refs / filter.output_refs SQL", () => {
  it("matches a leaf under inputs. (resp. output) equal to one of the refs", () => {
    const pb = new ParamBuilder();
    const sql = whereClause({ projectId: P, filter: { input_refs: [REF_A, REF_B], output_refs: [REF_C] }, noDeletions: true }, pb);
    expect(sql).toBe(
      "project_id = {pb_0:String}\n" +
        "  AND arrayExists((p, v) -> substring(p, 1, {pb_1:Int64}) = {pb_2:String} AND has({pb_3:Array(String)}, v), json_paths, json_values)\n" +
        "  AND arrayExists((p, v) -> substring(p, 1, {pb_4:Int64}) = {pb_5:String} AND has({pb_6:Array(String)}, v), json_paths, json_values)",
    );
    expect(pb.params).toEqual({
      pb_0: { type: "String", value: P },
      pb_1: { type: "Int64", value: 7 },
      pb_2: { type: "String", value: "inputs." },
      pb_3: { type: "Array(String)", value: [REF_A, REF_B] },
      pb_4: { type: "Int64", value: 6 },
      pb_5: { type: "String", value: "output" },
      pb_6: { type: "Array(String)", value: [REF_C] },
    });
  });

  it("adds nothing for empty lists", () => {
    const pb = new ParamBuilder();
    expect(whereClause({ projectId: P, filter: { input_refs: [], output_refs: [] }, noDeletions: true }, pb)).toBe("project_id = {pb_0:String}");
  });
});

describe("filter.input_refs / filter.output_refs through /calls/stream_query", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  let api: Client;

  /** Calls by id: where each carries refs. */
  const CALLS: Record<string, { inputs: Record<string, unknown>; output?: unknown; attributes?: Record<string, unknown> }> = {
    "top-level-input": { inputs: { example: REF_A } },
    "nested-input": { inputs: { batch: { items: [{ x: 1 }, { model: REF_B }] } } },
    "scalar-output": { inputs: { n: 1 }, output: REF_C },
    "nested-output": { inputs: {}, output: { scores: [{ by: REF_B }] } },
    "in-attributes-only": { inputs: {}, attributes: { ref: REF_A }, output: { text: REF_A } },
    "longer-string": { inputs: { text: `${REF_B}/attr/name`, prefix: `see ${REF_A}` } },
    "none": { inputs: { q: "hello" }, output: "plain" },
  };

  beforeAll(async () => {
    service = await startTestService();
    api = client(service.url);
    const at = Date.UTC(2026, 2, 1);
    const batch = Object.entries(CALLS).flatMap(([id, c], i) => [
      { mode: "start", req: { start: { project_id: P, id, trace_id: `t-${id}`, op_name: "op", started_at: iso(at + i * 1000), attributes: c.attributes ?? {}, inputs: c.inputs } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: iso(at + i * 1000 + 500), output: c.output ?? null, summary: {} } } },
    ]);
    await api.json("/call/upsert_batch", { batch });
  });
  afterAll(async () => service.stop());

  const ids = async (filter: Record<string, unknown>) =>
    (await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, filter, columns: ["id"] })).map((c) => c.id).sort();

  it("input_refs matches calls with one of the refs as an input leaf, at any depth, exactly", async () => {
    expect(await ids({ input_refs: [REF_A] })).toEqual(["top-level-input"]);
    expect(await ids({ input_refs: [REF_B] })).toEqual(["nested-input"]);
    expect(await ids({ input_refs: [REF_A, REF_B] })).toEqual(["nested-input", "top-level-input"]);
    expect(await ids({ input_refs: [REF_C] })).toEqual([]);
  });

  it("output_refs matches calls with one of the refs as their output or an output leaf", async () => {
    expect(await ids({ output_refs: [REF_C] })).toEqual(["scalar-output"]);
    expect(await ids({ output_refs: [REF_B, REF_C] })).toEqual(["nested-output", "scalar-output"]);
    expect(await ids({ output_refs: [REF_A] })).toEqual(["in-attributes-only"]);
  });

  it("combines with the other filter fields (AND), and empty lists filter nothing", async () => {
    expect(await ids({ input_refs: [REF_A, REF_B], call_ids: ["nested-input", "scalar-output"] })).toEqual(["nested-input"]);
    expect(await ids({ input_refs: [REF_B], output_refs: [REF_B] })).toEqual([]);
    expect(await ids({ input_refs: [], output_refs: [] })).toHaveLength(Object.keys(CALLS).length);
  });
});
