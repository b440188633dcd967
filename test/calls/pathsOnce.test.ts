import { describe, expect, it } from "vitest";
import { CALLS_LONG_LEAVES_MIGRATION, CALLS_MIGRATION, CALLS_PATHS_ONCE_MIGRATION } from "../../services/store/calls/schema.js";
import { migrate } from "../../services/store/migrations.js";
import { emptyStore } from "../support/database.js";

/**
 * Migration 49 gives `calls.json_paths` another type (LowCardinality) in a database that has
 * rows: the rows keep their paths, and the leaves are found by them as before.
 */
describe("migration 49 (calls_paths_once) on existing data", () => {
  it("retypes json_paths of a calls table that has rows, keeps every path, and runs again as a no-op", async () => {
    const store = await emptyStore();
    const older = [CALLS_MIGRATION, CALLS_LONG_LEAVES_MIGRATION];
    const all = [...older, CALLS_PATHS_ONCE_MIGRATION];
    const pathsType = async () =>
      (await store.rows<{ type: string }>("type", { sql: "SELECT type FROM system.columns WHERE database = currentDatabase() AND table = 'calls' AND name = 'json_paths'", params: {} }))[0]?.type;
    try {
      await migrate(store, older);
      expect(await pathsType()).toBe("Array(String)");
      await store.command("seed", {
        sql: `INSERT INTO calls (project_id, id, trace_id, op_name, started_at, attributes, inputs, json_paths, json_values, storage_size_bytes, version)
              VALUES ('e/p', 'a', 't', 'op', 1, '{}', '{"q":"x","n":1}', ['inputs.q', 'inputs.n'], ['x', '1'], 0, 1),
                     ('e/p', 'b', 't', 'op', 2, '{}', '{"q":"y"}', ['inputs.q'], ['y'], 0, 1)`,
        params: {},
      });

      expect(await migrate(store, all)).toEqual([CALLS_PATHS_ONCE_MIGRATION.version]);
      expect(await pathsType()).toBe("Array(LowCardinality(String))");
      const rows = await store.rows<{ id: string; json_paths: string[]; q: string; has_n: number }>("read", {
        sql: "SELECT id, json_paths, json_values[indexOf(json_paths, 'inputs.q')] AS q, has(json_paths, 'inputs.n') AS has_n FROM calls ORDER BY id",
        params: {},
      });
      expect(rows.map((r) => ({ ...r, has_n: Number(r.has_n) }))).toEqual([
        { id: "a", json_paths: ["inputs.q", "inputs.n"], q: "x", has_n: 1 },
        { id: "b", json_paths: ["inputs.q"], q: "y", has_n: 0 },
      ]);

      expect(await migrate(store, all)).toEqual([]);
    } finally {
      await store.command("drop", { sql: `DROP DATABASE IF EXISTS ${store.database}`, params: {} });
      await store.close();
    }
  });
});
