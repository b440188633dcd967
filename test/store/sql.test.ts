import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { RowBinaryWriter } from "../../services/store/rowBinary.js";
import { ParamBuilder, quoteString, renderSql, SqlParamError } from "../../services/store/sql.js";
import { freshStore } from "../support/database.js";

let store: ClickHouseStore;
beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => store.close());

const createRowBinaryTable = () =>
  store.command("test_rowbinary_table", {
    sql: "CREATE TABLE IF NOT EXISTS rowbinary_roundtrip (n Int64, s String, ns Nullable(String), a Array(String), i Int64, ni Nullable(Int64), u Array(String)) ENGINE = MergeTree ORDER BY n",
    params: {},
  });

describe("the escaping path", () => {
  it("round-trips random strings exactly through the real server", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: "binary" }), { minLength: 1, maxLength: 20 }), async (values) => {
        const pb = new ParamBuilder();
        const selects = values.map((v, i) => `${pb.str(v)} AS c${i}`).join(", ");
        const [row] = await store.rows<Record<string, string>>("test_escape", { sql: `SELECT ${selects}`, params: pb.params });
        expect(values.map((_, i) => row?.[`c${i}`])).toEqual(values);
      }),
      { numRuns: 150 },
    );
  });

  it("round-trips string arrays and integers", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.string({ unit: "binary" }), { maxLength: 8 }), fc.maxSafeInteger(), async (values, n) => {
        const pb = new ParamBuilder();
        const sql = `SELECT ${pb.strings(values)} AS a, ${pb.int(n)} AS n`;
        const [row] = await store.rows<{ a: string[]; n: string }>("test_escape_array", { sql, params: pb.params });
        expect(row?.a).toEqual(values);
        expect(Number(row?.n)).toBe(n);
      }),
      { numRuns: 60 },
    );
  });

  it("round-trips random rows exactly through RowBinary inserts", async () => {
    await createRowBinaryTable();
    const row = fc.record({
      s: fc.string({ unit: "binary", maxLength: 300 }),
      ns: fc.option(fc.string({ unit: "binary" }), { nil: null }),
      a: fc.array(fc.string({ unit: "binary" }), { maxLength: 6 }),
      u: fc.array(fc.string({ unit: "binary", maxLength: 100 }), { maxLength: 4 }),
      i: fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
      ni: fc.option(fc.maxSafeInteger(), { nil: null }),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 12 }), async (rows) => {
        const n0 = run++ * 100;
        // A small first buffer, so that growing it is exercised too.
        const out = new RowBinaryWriter(16);
        rows.forEach((r, k) =>
          out.int64(n0 + k).string(r.s).nullableString(r.ns).strings(r.a).int64(r.i).nullableInt64(r.ni).utf8Strings(r.u.map((v) => Buffer.from(v, "utf8"))),
        );
        await store.insertRowBinary("test_rowbinary_insert", "rowbinary_roundtrip", ["n", "s", "ns", "a", "i", "ni", "u"], out.bytes());
        const back = await store.rows<{ s: string; ns: string | null; a: string[]; i: string; ni: string | null; u: string[] }>("test_rowbinary_read", {
          sql: `SELECT s, ns, a, i, ni, u FROM rowbinary_roundtrip WHERE n >= ${n0} AND n < ${n0 + rows.length} ORDER BY n`,
          params: {},
        });
        expect(back.map((b) => ({ ...b, i: Number(b.i), ni: b.ni === null ? null : Number(b.ni) }))).toEqual(rows);
      }),
      { numRuns: 80 },
    );
  });

  it("round-trips long values whose length prefix takes 3 and 4 bytes", async () => {
    await createRowBinaryTable();
    const values = ["é".repeat(6_000), "x".repeat(200_000) + "€", "y".repeat(1_000_000)];
    const out = new RowBinaryWriter(16);
    values.forEach((v, k) => out.int64(1_000_000 + k).string(v).nullableString(null).strings([v.slice(0, 10)]).int64(-k).nullableInt64(k));
    await store.insertRowBinary("test_rowbinary_long", "rowbinary_roundtrip", ["n", "s", "ns", "a", "i", "ni"], out.bytes());
    const back = await store.rows<{ s: string }>("test_rowbinary_long_read", {
      sql: "SELECT s FROM rowbinary_roundtrip WHERE n >= 1000000 ORDER BY n",
      params: {},
    });
    expect(back.map((b) => b.s)).toEqual(values);
  });

  it("never lets a quote end the literal", () => {
    expect(quoteString("a' OR 1=1 --")).toBe("'a\\' OR 1=1 --'");
    expect(quoteString("back\\slash")).toBe("'back\\\\slash'");
    expect(quoteString("tab\tnew\nline\0")).toBe("'tab\\tnew\\nline\\0'");
  });

  it("names parameters deterministically and checks their types", () => {
    const pb = new ParamBuilder();
    const sql = `SELECT ${pb.str("x")}, ${pb.int(5)}`;
    expect(sql).toBe("SELECT {pb_0:String}, {pb_1:Int64}");
    expect(pb.params).toEqual({ pb_0: { type: "String", value: "x" }, pb_1: { type: "Int64", value: 5 } });
    expect(renderSql(sql, pb.params)).toBe("SELECT 'x', toInt64(5)");
    expect(() => renderSql("SELECT {pb_9:String}", pb.params)).toThrow(SqlParamError);
    expect(() => renderSql("SELECT {pb_0:Int64}", pb.params)).toThrow(SqlParamError);
  });
});
