import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../services/store/clickhouse.js";
import { ParamBuilder, quoteString, renderSql, SqlParamError } from "../services/store/sql.js";
import { freshStore } from "./support/database.js";

let store: ClickHouseStore;
beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => store.close());

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

  it("never lets a quote end the literal", () => {
    expect(quoteString("a' OR 1=1 --")).toBe("'a\\' OR 1=1 --'");
    expect(quoteString("back\\slash")).toBe("'back\\\\slash'");
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
