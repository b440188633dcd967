import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Operation } from "../../services/contract/queryExpr.js";
import { flattenCallJson } from "../../services/store/calls/flatten.js";
import { CALLS_QUERY_FIELDS } from "../../services/store/calls/queryFields.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { compileQuery } from "../../services/store/expr/compile.js";
import { orderByTerms, type SortDirection } from "../../services/store/expr/sort.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { freshStore } from "../support/database.js";

const PROJECT = "e/p";
const SEC = 1_000_000;
const T0 = 1_767_225_600 * SEC; // 2026-01-01T00:00:00Z in µs

interface CallSpec {
  id: string;
  project_id?: string;
  op_name?: string;
  display_name?: string | null;
  started_at: number;
  ended_at?: number | null;
  exception?: string | null;
  attributes?: Record<string, unknown>;
  inputs?: Record<string, unknown>;
  output?: unknown;
  summary?: Record<string, unknown> | null;
  wb_run_step?: number | null;
}

function row(spec: CallSpec): Record<string, unknown> {
  const attributes = spec.attributes ?? {};
  const inputs = spec.inputs ?? {};
  const ended = spec.ended_at ?? null;
  return {
    project_id: spec.project_id ?? PROJECT,
    id: spec.id,
    trace_id: `t-${spec.id}`,
    parent_id: null,
    thread_id: null,
    turn_id: null,
    op_name: spec.op_name ?? "weave:///e/p/op/predict:abc",
    display_name: spec.display_name ?? null,
    started_at: spec.started_at,
    ended_at: ended,
    exception: spec.exception ?? null,
    attributes: JSON.stringify(attributes),
    inputs: JSON.stringify(inputs),
    output: spec.output === undefined ? null : JSON.stringify(spec.output),
    summary: spec.summary == null ? null : JSON.stringify(spec.summary),
    otel_dump: null,
    wb_user_id: "u1",
    wb_run_id: null,
    wb_run_step: spec.wb_run_step ?? null,
    wb_run_step_end: null,
    ...flattenCallJson({ attributes, inputs, output: spec.output, summary: spec.summary ?? undefined }),
    storage_size_bytes: 0,
    version: 1,
  };
}

const CALLS: CallSpec[] = [
  {
    id: "c01",
    started_at: T0,
    ended_at: T0 + 1_500_000,
    attributes: { env: "prod" },
    inputs: { messages: [{ role: "user", content: "Hello Wörld" }], n: 5, flag: true },
    output: { score: 0.9, label: "ok" },
    summary: { status_counts: { success: 1, error: 0 } },
    wb_run_step: 1,
  },
  { id: "c02", started_at: T0 + 1_500_000, ended_at: null, attributes: { env: "dev" }, inputs: { n: "5" } },
  {
    id: "c03",
    started_at: T0 + 2 * SEC,
    ended_at: T0 + 2 * SEC + 250_000,
    exception: "ValueError: bad",
    display_name: "My Eval",
    inputs: { n: "5.0" },
    output: { score: 0.2 },
    wb_run_step: 2,
  },
  {
    id: "c04",
    started_at: T0 + 3 * SEC,
    ended_at: T0 + 13 * SEC,
    inputs: { n: 10 },
    output: "just text",
    summary: { status_counts: { success: 1, error: 2 } },
  },
  {
    id: "c05",
    started_at: T0 + 4 * SEC,
    ended_at: T0 + 4 * SEC + 100_000,
    attributes: { env: "prod", tags: ["a", "b"] },
    inputs: { n: 9, messages: [{ role: "user", content: "ПРИВЕТ мир" }] },
    output: { score: "0.95" },
  },
  {
    id: "c06",
    started_at: T0 + 5 * SEC,
    ended_at: T0 + 6 * SEC,
    inputs: { nested: { deep: { x: 1 } }, empty: {}, list: [] },
    output: null,
  },
  { id: "c07", started_at: T0 + 6 * SEC, ended_at: T0 + 7 * SEC, inputs: { n: null }, output: { label: "O'Reilly \"q\" \\ end" } },
  {
    id: "c08",
    started_at: T0 + 86_400 * SEC,
    ended_at: T0 + 86_400 * SEC + 2 * SEC,
    inputs: { messages: [{ role: "user", content: "Straße" }] },
    wb_run_step: 3,
  },
  { id: "c09", op_name: "weave:///e/p/op/other:def", display_name: "", started_at: T0 + 7 * SEC, ended_at: T0 + 8 * SEC },
  // Another project: never returned.
  { id: "x01", project_id: "e/other", started_at: T0, ended_at: T0 + SEC, inputs: { n: 5 }, output: { score: 0.9 } },
];

let store: ClickHouseStore;
beforeAll(async () => {
  store = await freshStore();
  await store.insert("test", "calls", CALLS.map(row));
});
afterAll(async () => store.close());

async function ids(expr: Operation, sort: [string, SortDirection][] = [], project = PROJECT): Promise<string[]> {
  const pb = new ParamBuilder();
  const where = compileQuery({ $expr: expr }, CALLS_QUERY_FIELDS, pb);
  const orderBy = [...orderByTerms(sort.map(([field, direction]) => ({ field, direction })), CALLS_QUERY_FIELDS, pb), "id ASC"].join(", ");
  const sql = `SELECT id FROM calls FINAL WHERE project_id = ${pb.str(project)} AND ${where} ORDER BY ${orderBy}`;
  const rows = await store.rows<{ id: string }>("test_calls_expr", { sql, params: pb.params });
  return rows.map((r) => r.id);
}

const f = (path: string) => ({ $getField: path });
const lit = (value: unknown) => ({ $literal: value }) as { $literal: never };

describe("compiled filters on real rows", () => {
  it("$eq on a nested path, as text and as number", async () => {
    expect(await ids({ $eq: [f("inputs.messages.0.content"), lit("Hello Wörld")] })).toEqual(["c01"]);
    expect(await ids({ $eq: [f("output.label"), lit("O'Reilly \"q\" \\ end")] })).toEqual(["c07"]);
    expect(await ids({ $eq: [f("inputs.nested.deep.x"), lit(1)] })).toEqual(["c06"]);
  });

  it("numbers stored as numbers and as strings", async () => {
    // n: 5 (number), "5" (string) and "5.0" (string): numerically all equal 5.
    expect(await ids({ $eq: [f("inputs.n"), lit(5)] })).toEqual(["c01", "c02", "c03"]);
    // As text, the number 5 and the string "5" both read "5"; "5.0" does not.
    expect(await ids({ $eq: [f("inputs.n"), lit("5")] })).toEqual(["c01", "c02"]);
    expect(await ids({ $gt: [f("inputs.n"), lit(6)] })).toEqual(["c04", "c05"]);
    // Text comparison when the literal is a string: "9" > "6" but "10" < "6"; the JSON
    // null leaf reads "null", which is > "6" as text.
    expect(await ids({ $gt: [f("inputs.n"), lit("6")] })).toEqual(["c05", "c07"]);
    expect(await ids({ $gte: [{ $convert: { input: f("output.score"), to: "double" } }, lit(0.9)] })).toEqual(["c01", "c05"]);
  });

  it("$eq with bool, null, empty containers", async () => {
    expect(await ids({ $eq: [f("inputs.flag"), lit(true)] })).toEqual(["c01"]);
    expect(await ids({ $eq: [f("inputs.n"), lit(null)] })).toEqual(["c06", "c07", "c08", "c09"]);
    expect(await ids({ $eq: [f("output"), lit(null)] })).toEqual(["c02", "c06", "c08", "c09"]);
    expect(await ids({ $eq: [f("inputs.empty"), lit({})] })).toEqual(["c06"]);
    expect(await ids({ $eq: [f("inputs.list"), lit([])] })).toEqual(["c06"]);
    expect(await ids({ $eq: [f("output"), lit("just text")] })).toEqual(["c04"]);
    expect(await ids({ $eq: [f("ended_at"), lit(null)] })).toEqual(["c02"]);
  });

  it("started_at against seconds and ISO strings", async () => {
    expect(await ids({ $gte: [f("started_at"), lit(1_767_225_601.5)] })).toEqual(["c02", "c03", "c04", "c05", "c06", "c07", "c08", "c09"]);
    expect(await ids({ $gt: [f("started_at"), lit(1_767_225_601.5)] })).toEqual(["c03", "c04", "c05", "c06", "c07", "c08", "c09"]);
    expect(await ids({ $gte: [f("started_at"), lit("2026-01-02T00:00:00Z")] })).toEqual(["c08"]);
    expect(await ids({ $eq: [f("started_at"), lit("2026-01-01T00:00:01.500000Z")] })).toEqual(["c02"]);
    expect(await ids({ $gt: [lit("2026-01-01T01:00:02+01:00"), f("started_at")] })).toEqual(["c01", "c02"]);
    expect(await ids({ $gt: [f("ended_at"), lit("2026-01-01T00:00:12Z")] })).toEqual(["c04", "c08"]);
  });

  it("computed status, latency and trace name", async () => {
    const status = (s: string) => ids({ $eq: [f("summary.weave.status"), lit(s)] });
    expect(await status("running")).toEqual(["c02"]);
    expect(await status("error")).toEqual(["c03"]);
    expect(await status("descendant_error")).toEqual(["c04"]);
    expect(await status("success")).toEqual(["c01", "c05", "c06", "c07", "c08", "c09"]);
    expect(await ids({ $gt: [f("summary.weave.latency_ms"), lit(1000)] })).toEqual(["c01", "c04", "c08"]);
    expect(await ids({ $eq: [f("summary.weave.latency_ms"), lit(250)] })).toEqual(["c03"]);
    expect(await ids({ $eq: [f("summary.weave.trace_name"), lit("My Eval")] })).toEqual(["c03"]);
    // The op's short name, as the JSON shows it; not the full ref.
    expect(await ids({ $eq: [f("summary.weave.trace_name"), lit("other")] })).toEqual(["c09"]);
    expect(await ids({ $eq: [f("summary.weave.trace_name"), lit("weave:///e/p/op/other:def")] })).toEqual([]);
    expect(await ids({ $eq: [f("summary.weave.trace_name"), lit("predict")] })).toEqual(["c01", "c02", "c04", "c05", "c06", "c07", "c08"]);
  });

  it("$contains, case-sensitive and not, with non-ASCII", async () => {
    const has = (path: string, s: string, ci = false) => ids({ $contains: { input: f(path), substr: lit(s), case_insensitive: ci } });
    expect(await has("inputs.messages.0.content", "wörld")).toEqual([]);
    expect(await has("inputs.messages.0.content", "WÖRLD", true)).toEqual(["c01"]);
    expect(await has("inputs.messages.0.content", "привет", true)).toEqual(["c05"]);
    expect(await has("inputs.messages.0.content", "привет")).toEqual([]);
    expect(await has("inputs.messages.0.content", "straße", true)).toEqual(["c08"]);
    expect(await has("op_name", "other")).toEqual(["c09"]);
  });

  it("$in, $not, $and, $or, exists", async () => {
    expect(await ids({ $in: [f("id"), [lit("c03"), lit("c05"), lit("x01")]] })).toEqual(["c03", "c05"]);
    expect(await ids({ $in: [f("wb_run_step"), [lit(1), lit(3)]] })).toEqual(["c01", "c08"]);
    expect(await ids({ $in: [f("id"), []] })).toEqual([]);
    // Two-valued: "not prod" includes calls without the attribute.
    expect(await ids({ $not: [{ $eq: [f("attributes.env"), lit("prod")] }] })).toEqual(["c02", "c03", "c04", "c06", "c07", "c08", "c09"]);
    expect(
      await ids({ $and: [{ $eq: [f("attributes.env"), lit("prod")] }, { $gt: [f("inputs.n"), lit(6)] }] }),
    ).toEqual(["c05"]);
    expect(await ids({ $or: [{ $eq: [f("attributes.tags.1"), lit("b")] }, { $eq: [f("exception"), lit("ValueError: bad")] }] })).toEqual([
      "c03",
      "c05",
    ]);
    expect(await ids({ $and: [{ $convert: { input: f("output.score"), to: "exists" } }] })).toEqual(["c01", "c03", "c05"]);
    expect(await ids({ $contains: { input: f("output"), substr: lit('"label":"ok"') } })).toEqual(["c01"]);
  });
});

describe("sorting on real rows", () => {
  it("sorts JSON leaves numerically first, then as text, NULLs last", async () => {
    const all: Operation = { $eq: [f("project_id"), lit(PROJECT)] };
    // n: 5, "5", "5.0", 10, 9 numeric; null leaf ("null") is text; absent last.
    expect(await ids(all, [["inputs.n", "asc"]])).toEqual(["c01", "c02", "c03", "c05", "c04", "c07", "c06", "c08", "c09"]);
    // Equal numbers (5, "5", "5.0") then go by text: "5.0" > "5"; then by id.
    expect(await ids(all, [["inputs.n", "desc"]])).toEqual(["c04", "c05", "c03", "c01", "c02", "c07", "c06", "c08", "c09"]);
  });

  it("sorts datetime and computed number fields", async () => {
    const all: Operation = { $eq: [f("project_id"), lit(PROJECT)] };
    expect(await ids(all, [["started_at", "desc"]])).toEqual(["c08", "c09", "c07", "c06", "c05", "c04", "c03", "c02", "c01"]);
    expect((await ids(all, [["summary.weave.latency_ms", "desc"]])).slice(0, 3)).toEqual(["c04", "c08", "c01"]);
    expect((await ids(all, [["summary.weave.latency_ms", "asc"]])).at(-1)).toEqual("c02");
    expect((await ids(all, [["summary.weave.latency_ms", "desc"]])).at(-1)).toEqual("c02");
  });
});

describe("injection-proof literals", () => {
  it("a random string as an $eq literal matches exactly the rows holding it", async () => {
    const text = fc.oneof(
      fc.string({ unit: "binary", maxLength: 30 }),
      fc.constantFrom("'", "\\", "\\'", "' OR 1=1 --", "{pb_0:String}", "\0", "%", "_", "null", "", "true"),
    );
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 5 }), text, async (stored, probe) => {
        const project = `prop/${run++}`;
        const rows = stored.map((s, i) => row({ id: `r${i}`, project_id: project, started_at: T0, ended_at: T0, inputs: { s } }));
        await store.insert("test", "calls", rows);
        for (const wanted of [...new Set([...stored, probe])]) {
          const expected = stored.flatMap((s, i) => (s === wanted ? [`r${i}`] : []));
          expect(await ids({ $eq: [f("inputs.s"), lit(wanted)] }, [], project)).toEqual(expected);
        }
      }),
      { numRuns: 40 },
    );
  });
});
