import { beforeAll, describe, expect, it } from "vitest";
import { expandedFields, expansionOf } from "../../services/store/calls/expandedFields.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { client, iso, serviceForFile, type Client } from "../support/service.js";

/** `expand_columns` on /calls/stream_query and /calls/query_stats: filters, sorts and answers through refs. */
const P = "acme/expand";
const OTHER = "acme/expand-other";
const ref = (project: string, rest: string) => `weave:///${project}/${rest}`;

type Call = { id: string; inputs: Record<string, unknown> };
type Detail = { detail: { loc: (string | number)[]; msg: string; type: string }[] };

describe("expansionOf: which expand columns a field path goes through", () => {
  it("takes the shortest matching column and the columns nested in it, shortest first", () => {
    expect(expansionOf("inputs.example.question", ["inputs.example"])).toEqual({ chain: ["inputs.example"], leafKeys: ["question"] });
    expect(expansionOf("inputs.model.config.name", ["inputs.model.config", "inputs.model", "output.x"])).toEqual({
      chain: ["inputs.model", "inputs.model.config"],
      leafKeys: ["name"],
    });
    expect(expansionOf("inputs.example", ["inputs.example"])).toBeUndefined();
    expect(expansionOf("inputs.examples.a", ["inputs.example"])).toBeUndefined();
  });
});

describe("expandedFields: the SQL of a field below an expand column", () => {
  it("looks the call's ref up in the bound refs, else reads the call's own leaf; every value is a parameter", () => {
    const pb = new ParamBuilder();
    const set = expandedFields(new Map([["inputs.example.q", { column: "inputs.example", keys: ["weave:///a/b/object/x:1"], values: ["v"] }]]));
    const field = set.resolve("inputs.example.q", pb, {});
    const at = "transform(json_values[indexOf(json_paths, {pb_1:String})], {pb_2:Array(String)}, arrayEnumerate({pb_2:Array(String)}), 0)";
    const own = "if(indexOf(json_paths, {pb_0:String}) = 0, NULL, json_values[indexOf(json_paths, {pb_0:String})])";
    expect(field).toEqual({ sql: `if(${at} = 0, ${own}, {pb_3:Array(String)}[${at}])`, kind: "json_leaf", nullable: true });
    expect(pb.params).toEqual({
      pb_0: { type: "String", value: "inputs.example.q" },
      pb_1: { type: "String", value: "inputs.example" },
      pb_2: { type: "Array(String)", value: ["weave:///a/b/object/x:1"] },
      pb_3: { type: "Array(String)", value: ["v"] },
    });
    expect(set.resolve("inputs.other", new ParamBuilder(), {})).toBeUndefined();
  });
});

describe("expand_columns through the calls query", () => {
  const service = serviceForFile();
  let api: Client;
  const refs: Record<string, string> = {};
  const rowRef: Record<string, string> = {};
  const rows = [
    { country: "France", capital: "Paris", pop: 68 },
    { country: "Japan", capital: "Tokyo", pop: 125 },
    { country: "Peru", capital: "Lima", pop: 34 },
  ];

  const createObject = async (project: string, objectId: string, val: unknown) => {
    const { digest } = await api.json<{ digest: string }>("/obj/create", { obj: { project_id: project, object_id: objectId, val } });
    return ref(project, `object/${objectId}:${digest}`);
  };

  beforeAll(async () => {
    api = client(service.url);
    const table = await api.json<{ digest: string; row_digests: string[] }>("/table/create", { table: { project_id: P, rows } });
    refs.dataset = await createObject(P, "capitals", { _type: "Dataset", name: "capitals", rows: ref(P, `table/${table.digest}`) });
    rows.forEach((row, i) => (rowRef[row.country] = `${refs.dataset}/attr/rows/id/${table.row_digests[i]}`));
    // A table-row ref written directly (not through the dataset).
    refs.japanRow = ref(P, `table/${table.digest}/id/${table.row_digests[1]}`);
    refs.small = await createObject(P, "config-small", { name: "small", temperature: 0.5 });
    refs.large = await createObject(P, "config-large", { name: "large", temperature: 1.0 });
    refs.model1 = await createObject(P, "model", { label: "m1", config: refs.small });
    refs.model2 = await createObject(P, "model", { label: "m2", config: refs.large });
    refs.gone = await createObject(P, "gone", { label: "deleted" });
    await api.json("/obj/delete", { project_id: P, object_id: "gone" });
    // The same rows in another project: a ref there must never be read.
    const otherTable = await api.json<{ digest: string; row_digests: string[] }>("/table/create", { table: { project_id: OTHER, rows } });
    refs.missingRow = ref(P, `table/${table.digest}/id/no-such-row`);
    refs.otherRow = ref(OTHER, `table/${otherTable.digest}/id/${otherTable.row_digests[0]}`);

    const calls: Record<string, Record<string, unknown>> = {
      c1: { example: rowRef.France, model: refs.model1 },
      c2: { example: refs.japanRow, model: refs.model2 },
      c3: { example: rowRef.Peru, model: refs.gone },
      c4: { example: { country: "Inline", pop: 1 } },
      c5: { example: refs.otherRow },
      c6: { example: refs.missingRow, model: ref(P, "object/model:nodigest") },
    };
    const at = Date.UTC(2026, 3, 1);
    const batch = Object.entries(calls).flatMap(([id, inputs], i) => [
      { mode: "start", req: { start: { project_id: P, id, trace_id: `t-${id}`, op_name: "predict", started_at: iso(at + i * 1000), attributes: {}, inputs } } },
      { mode: "end", req: { end: { project_id: P, id, ended_at: iso(at + i * 1000 + 500), output: null, summary: {} } } },
    ]);
    await api.json("/call/upsert_batch", { batch });
  });

  const query = (body: Record<string, unknown>) => api.lines<Call>("/calls/stream_query", { project_id: P, ...body });
  const ids = async (body: Record<string, unknown>) => (await query({ ...body, columns: ["id"] })).map((c) => c.id);
  const eq = (field: string, value: unknown) => ({ $expr: { $eq: [{ $getField: field }, { $literal: value }] } });

  it("filters on a field of a table row named by a dataset ref or by a table-row ref", async () => {
    const expand_columns = ["inputs.example"];
    expect(await ids({ expand_columns, query: eq("inputs.example.country", "Japan") })).toEqual(["c2"]);
    expect(await ids({ expand_columns, query: eq("inputs.example.country", "France") })).toEqual(["c1"]);
    expect(await ids({ expand_columns, query: { $expr: { $gt: [{ $getField: "inputs.example.pop" }, { $literal: 50 }] } } })).toEqual(["c1", "c2"]);
    expect(await ids({ expand_columns, query: { $expr: { $contains: { input: { $getField: "inputs.example.capital" }, substr: { $literal: "i" } } } } })).toEqual(["c1", "c3"]);
    // Without expand_columns the path is the call's own leaf: only the inline dict has it.
    expect(await ids({ query: eq("inputs.example.country", "Japan") })).toEqual([]);
    expect(await ids({ query: eq("inputs.example.country", "Inline") })).toEqual(["c4"]);
  });

  it("answers the resolved values with their _ref by default, the ref strings with return_expanded_column_values false", async () => {
    const [expanded] = await query({ expand_columns: ["inputs.example"], query: eq("inputs.example.country", "Japan") });
    expect(expanded!.inputs).toEqual({ example: { country: "Japan", capital: "Tokyo", pop: 125, _ref: refs.japanRow }, model: refs.model2 });
    const [kept] = await query({ expand_columns: ["inputs.example"], return_expanded_column_values: false, query: eq("inputs.example.country", "Japan") });
    expect(kept!.inputs).toEqual({ example: refs.japanRow, model: refs.model2 });
  });

  it("sorts by a field of the resolved value, calls without one last", async () => {
    const sorted = (direction: string) => ids({ expand_columns: ["inputs.example"], sort_by: [{ field: "inputs.example.pop", direction }] });
    // c4's inline dict has its own pop (1); c5 and c6 do not resolve: last, by id in the sort's direction.
    expect(await sorted("desc")).toEqual(["c2", "c1", "c3", "c4", "c6", "c5"]);
    expect(await sorted("asc")).toEqual(["c4", "c3", "c1", "c2", "c5", "c6"]);
    const byCountry = await ids({ expand_columns: ["inputs.example"], sort_by: [{ field: "inputs.example.country", direction: "asc" }] });
    expect(byCountry).toEqual(["c1", "c4", "c2", "c3", "c5", "c6"]);
  });

  it("follows nested refs when expand_columns lists every level", async () => {
    const both = ["inputs.model", "inputs.model.config"];
    expect(await ids({ expand_columns: both, query: eq("inputs.model.config.name", "large") })).toEqual(["c2"]);
    expect(await ids({ expand_columns: both, sort_by: [{ field: "inputs.model.config.temperature", direction: "asc" }] })).toEqual(["c1", "c2", "c3", "c4", "c5", "c6"]);
    // Only the first level listed: config is a ref string there, with no keys.
    expect(await ids({ expand_columns: ["inputs.model"], query: eq("inputs.model.config.name", "large") })).toEqual([]);
    expect(await ids({ expand_columns: ["inputs.model"], query: eq("inputs.model.label", "m2") })).toEqual(["c2"]);

    const [c1] = await query({ expand_columns: both, query: eq("inputs.model.label", "m1") });
    expect(c1!.inputs).toEqual({
      example: rowRef.France,
      model: { label: "m1", config: { name: "small", temperature: 0.5, _ref: refs.small }, _ref: refs.model1 },
    });
  });

  it("leaves refs that do not resolve as they are: deleted objects, unknown rows and versions", async () => {
    const calls = await query({ expand_columns: ["inputs.example", "inputs.model"], sort_by: [{ field: "id", direction: "asc" }] });
    const inputsOf = (id: string) => calls.find((c) => c.id === id)!.inputs;
    expect(inputsOf("c3")).toEqual({ example: { ...rows[2], _ref: rowRef.Peru }, model: refs.gone });
    expect(inputsOf("c6")).toEqual({ example: refs.missingRow, model: ref(P, "object/model:nodigest") });
    const exists = { $expr: { $and: [{ $convert: { input: { $getField: "inputs.example.country" }, to: "exists" } }] } };
    expect(await ids({ expand_columns: ["inputs.example"], query: exists })).toEqual(["c1", "c2", "c3", "c4"]);
  });

  it("never reads a ref into another project, for the filter or the answer", async () => {
    // c5's ref names a France row of another project.
    expect(await ids({ expand_columns: ["inputs.example"], query: eq("inputs.example.country", "France") })).toEqual(["c1"]);
    const [c5] = await query({ expand_columns: ["inputs.example"], filter: { call_ids: ["c5"] } });
    expect(c5!.inputs).toEqual({ example: refs.otherRow });
  });

  it("counts through expanded refs in /calls/query_stats", async () => {
    const stats = (body: Record<string, unknown>) => api.json<{ count: number }>("/calls/query_stats", { project_id: P, ...body });
    expect(await stats({ expand_columns: ["inputs.example"], query: eq("inputs.example.country", "Japan") })).toEqual({ count: 1 });
    expect(await stats({ expand_columns: ["inputs.example"], query: { $expr: { $gt: [{ $getField: "inputs.example.pop" }, { $literal: 0 }] } } })).toEqual({ count: 4 });
    expect(await stats({ query: eq("inputs.example.country", "Japan") })).toEqual({ count: 0 });
  });

  it("refuses an expand column that is not a path below inputs, output, attributes or summary (422)", async () => {
    for (const column of ["inputs", "foo.bar", "inputs.a'b"]) {
      const res = await api.post("/calls/stream_query", { project_id: P, expand_columns: [column], query: eq("inputs.example.country", "Japan") });
      expect({ column, status: res.status }).toEqual({ column, status: 422 });
      const body = (await res.json()) as Detail;
      expect(body.detail[0]!.loc).toEqual(["body", "expand_columns"]);
    }
  });
});
