import { beforeAll, describe, expect, it } from "vitest";
import { MAX_LEAF_CHARS } from "../../services/store/calls/flatten.js";
import { CALLS_LONG_LEAVES_MIGRATION, CALLS_MIGRATION } from "../../services/store/calls/schema.js";
import { migrate } from "../../services/store/migrations.js";
import { emptyStore } from "../support/database.js";
import { iso, serviceForFile } from "../support/service.js";

/**
 * `$eq`, `$in` and `$not $eq` on values longer than the leaves' cut (MAX_LEAF_CHARS) are
 * exact: a 10,000-character string is found by itself and by nothing that only shares its
 * first 4,096 characters (or is those characters alone).
 */
const service = serviceForFile();
const P = "acme/longvalues";
const T0 = Date.UTC(2026, 10, 2, 12, 0, 0);

const prefix = "p".repeat(MAX_LEAF_CHARS);
const LONG = `${prefix}${"a".repeat(10_000 - MAX_LEAF_CHARS)}`;
const NEAR = `${prefix}${"a".repeat(10_000 - MAX_LEAF_CHARS - 1)}b`;
const LONGER = `${LONG}a`;
// A pair that only fits when the surrogate pair at the cut is kept whole elsewhere.
const EMOJI_AT_CUT = `${"e".repeat(MAX_LEAF_CHARS - 1)}😀tail`;

const call = (id: string, i: number, inputs: Record<string, unknown>, output: unknown) => [
  { mode: "start", req: { start: { project_id: P, id, op_name: "op", trace_id: id, started_at: iso(T0 + i * 1000), attributes: {}, inputs } } },
  { mode: "end", req: { end: { project_id: P, id, ended_at: iso(T0 + i * 1000 + 10), output, summary: {} } } },
];

const ids = async (expr: Record<string, unknown>): Promise<string[]> =>
  (await service.api.lines<{ id: string }>("/calls/stream_query", { project_id: P, columns: ["id"], query: { $expr: expr } })).map((c) => c.id);

const field = (path: string) => ({ $getField: path });
const lit = (value: unknown) => ({ $literal: value });

describe("filters on values longer than the leaf cut", () => {
  beforeAll(async () => {
    await service.api.json("/call/upsert_batch", {
      batch: [
        ...call("long", 0, { text: LONG }, LONG),
        ...call("near", 1, { text: NEAR }, NEAR),
        ...call("prefix", 2, { text: prefix }, prefix),
        ...call("longer", 3, { text: LONGER }, { text: LONGER }),
        ...call("emoji", 4, { text: EMOJI_AT_CUT }, "short"),
        ...call("short", 5, { text: "short" }, "short"),
      ],
    });
  });

  it("$eq finds the 10,000-character value and none of its near misses", async () => {
    expect(await ids({ $eq: [field("inputs.text"), lit(LONG)] })).toEqual(["long"]);
    expect(await ids({ $eq: [field("inputs.text"), lit(NEAR)] })).toEqual(["near"]);
    expect(await ids({ $eq: [field("inputs.text"), lit(LONGER)] })).toEqual(["longer"]);
    expect(await ids({ $eq: [lit(LONG), field("inputs.text")] })).toEqual(["long"]);
  });

  it("$eq on the shared 4,096-character prefix finds only the call whose value is the prefix", async () => {
    expect(await ids({ $eq: [field("inputs.text"), lit(prefix)] })).toEqual(["prefix"]);
    expect(await ids({ $eq: [field("inputs.text"), lit(EMOJI_AT_CUT)] })).toEqual(["emoji"]);
    expect(await ids({ $eq: [field("inputs.text"), lit(EMOJI_AT_CUT.slice(0, MAX_LEAF_CHARS - 1))] })).toEqual([]);
    expect(await ids({ $eq: [field("inputs.text"), lit(`${prefix}a`)] })).toEqual([]);
  });

  it("$in and $not $eq are exact too", async () => {
    expect(await ids({ $in: [field("inputs.text"), [lit(NEAR), lit("short"), lit(`${LONG}x`)]] })).toEqual(["near", "short"]);
    expect(await ids({ $not: [{ $eq: [field("inputs.text"), lit(LONG)] }] })).toEqual(["near", "prefix", "longer", "emoji", "short"]);
    expect(await ids({ $not: [{ $in: [field("inputs.text"), [lit(LONG), lit(prefix)]] }] })).toEqual(["near", "longer", "emoji", "short"]);
  });

  it("a whole scalar part (output) and a leaf below it compare exactly", async () => {
    expect(await ids({ $eq: [field("output"), lit(LONG)] })).toEqual(["long"]);
    expect(await ids({ $eq: [field("output"), lit(prefix)] })).toEqual(["prefix"]);
    expect(await ids({ $eq: [field("output.text"), lit(LONGER)] })).toEqual(["longer"]);
    expect(await ids({ $eq: [field("output.text"), lit(LONG)] })).toEqual([]);
    expect(await ids({ $eq: [field("output"), lit({ text: LONGER })] })).toEqual(["longer"]);
  });
});

describe("migration 24 (calls_long_leaves) on existing data", () => {
  it("adds the columns to a calls table that has rows, keeps them, and runs again as a no-op", async () => {
    const store = await emptyStore();
    try {
      await migrate(store, [CALLS_MIGRATION]);
      await store.command("seed", {
        sql: `INSERT INTO calls (project_id, id, trace_id, op_name, started_at, attributes, inputs, json_paths, json_values, storage_size_bytes, version)
              VALUES ('e/p', 'old', 't', 'op', 1, '{}', '{"a":"x"}', ['inputs.a'], ['x'], 0, 1)`,
        params: {},
      });
      expect(await migrate(store, [CALLS_MIGRATION, CALLS_LONG_LEAVES_MIGRATION])).toEqual([24]);
      await migrate(store, [CALLS_MIGRATION, CALLS_LONG_LEAVES_MIGRATION]);
      const rows = await store.rows<{ id: string; json_long_paths: string[]; json_long_hashes: string[] }>("read", {
        sql: "SELECT id, json_long_paths, json_long_hashes FROM calls",
        params: {},
      });
      expect(rows).toEqual([{ id: "old", json_long_paths: [], json_long_hashes: [] }]);
    } finally {
      await store.command("drop", { sql: `DROP DATABASE IF EXISTS ${store.database}`, params: {} });
      await store.close();
    }
  });
});
