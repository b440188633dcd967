import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startLocalClickHouse } from "../../services/store/localServer.js";

const dir = mkdtempSync(join(tmpdir(), "local-ch-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs one statement on the server at `url`; its answer's text, or a failed expectation naming the statement. */
const queryOn = (url: string) => async (sql: string): Promise<string> => {
  const res = await fetch(`${url}/?database=default`, { method: "POST", body: sql });
  const text = await res.text();
  expect(res.status, `${sql}: ${text}`).toBe(200);
  return text;
};

/** The server's own log tables (`system.*_log`: query, query thread, part, trace, metric, text logs...) and the rows each holds. */
async function systemLogRows(url: string): Promise<Record<string, number>> {
  const query = queryOn(url);
  const tables = (await query("SELECT name FROM system.tables WHERE database = 'system' AND name LIKE '%\\_log' FORMAT TSV")).split("\n").filter(Boolean);
  const out: Record<string, number> = {};
  for (const table of tables) out[table] = Number(await query(`SELECT count() FROM system.${table}`));
  return out;
}

describe("the local ClickHouse server (make start)", () => {
  // CLICKHOUSE_LOG_QUERIES=1 (diagnosis) asks for the query and part logs on purpose.
  it.skipIf(process.env.CLICKHOUSE_LOG_QUERIES === "1")("keeps no log tables of its own: queries, inserts and merges leave nothing in system.*_log", async () => {
    const server = await startLocalClickHouse(mkdtempSync(join(dir, "logs-")));
    try {
      const run = queryOn(server.url);
      await run("CREATE TABLE t (k UInt64, v String) ENGINE = MergeTree() ORDER BY k");
      for (let i = 0; i < 5; i++) await run(`INSERT INTO t SELECT number, toString(number) FROM system.numbers LIMIT ${i * 1000}, 1000`);
      await run("OPTIMIZE TABLE t FINAL");
      for (let i = 0; i < 20; i++) await run("SELECT count(), sum(k) FROM t WHERE v != ''");
      await run("SYSTEM FLUSH LOGS");
      expect(await systemLogRows(server.url)).toEqual({});
    } finally {
      await server.stop();
    }
  });

  it("merges every part vertically, and a ReplacingMergeTree merged so keeps each row's newest version", async () => {
    const server = await startLocalClickHouse(mkdtempSync(join(dir, "merges-")));
    try {
      const query = queryOn(server.url);
      expect(await query("SELECT name, value FROM system.merge_tree_settings WHERE name LIKE 'vertical_merge_algorithm_min_%' ORDER BY name FORMAT TSV")).toBe(
        "vertical_merge_algorithm_min_columns_to_activate\t1\nvertical_merge_algorithm_min_rows_to_activate\t1\n",
      );
      await query("CREATE TABLE r (k UInt64, v String, tags Array(String), version UInt64) ENGINE = ReplacingMergeTree(version) ORDER BY k");
      for (let version = 1; version <= 3; version++) {
        await query(`INSERT INTO r SELECT number, concat('v', toString(${version})), [toString(number), 'x'], ${version} FROM system.numbers LIMIT ${version * 100}`);
      }
      await query("OPTIMIZE TABLE r FINAL");
      expect(await query("SELECT count(), uniqExact(k), countIf(version = 3 AND v = 'v3' AND tags = [toString(k), 'x']) FROM r FORMAT TSV")).toBe("300\t300\t300\n");
      expect(await query("SELECT count() FROM system.parts WHERE table = 'r' AND active FORMAT TSV")).toBe("1\n");
    } finally {
      await server.stop();
    }
  });

  it("stops on SIGTERM by itself, without being killed, and starts again on its data", async () => {
    const server = await startLocalClickHouse(dir);
    // A connection left open from the start-up check would hold the server's shutdown until it is killed.
    expect(await server.stop()).toEqual({ code: 0, signal: null });
    const again = await startLocalClickHouse(dir);
    expect(await again.stop()).toEqual({ code: 0, signal: null });
  });
});
