import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALL_FIELD_ENTRIES, CALL_FIELDS, nullableInRow, SHOWN_ORDER } from "../../services/contract/callFields.js";
import { CallSchema } from "../../services/contract/calls.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { freshStore } from "../support/database.js";

/** The table of call fields (contract/callFields.ts) against what is not derived from it: the DDL and the contract's CallSchema. */

let store: ClickHouseStore;
beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => store.close());

describe("the call field table", () => {
  it("lists the shown fields in CallSchema's order, and only those", () => {
    expect(new Set(SHOWN_ORDER)).toEqual(new Set(CALL_FIELD_ENTRIES.filter(([, spec]) => spec.shown).map(([name]) => name)));
    const schemaKeys = Object.keys(CallSchema.shape).filter((key) => key in CALL_FIELDS);
    expect(schemaKeys).toEqual([...SHOWN_ORDER]);
  });

  it("matches the columns of the calls table, type and nullability", async () => {
    const columns = await store.rows<{ name: string; type: string }>("test_call_columns", {
      sql: "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'calls'",
      params: {},
    });
    const types = new Map(columns.map((c) => [c.name, c.type]));
    for (const [name, spec] of CALL_FIELD_ENTRIES) {
      const base = spec.type === "int" || spec.type === "datetime" ? "Int64" : "String";
      expect({ name, type: types.get(name) }).toEqual({ name, type: nullableInRow(spec) ? `Nullable(${base})` : base });
    }
  });
});
