import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { StoreQueryError, StoreUnavailableError } from "../../services/errors.js";
import { ClickHouseStore } from "../../services/store/clickhouse.js";
import { freePort } from "../../services/store/localServer.js";
import { RowBinaryWriter } from "../../services/store/rowBinary.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { freshStore } from "../support/database.js";

let first: ClickHouseStore;
let second: ClickHouseStore;
beforeAll(async () => {
  [first, second] = await Promise.all([freshStore(), freshStore()]);
});
afterAll(async () => {
  await Promise.all([first.close(), second.close()]);
});

const createTable = (store: ClickHouseStore) =>
  store.command("test_kv_table", { sql: "CREATE TABLE IF NOT EXISTS kv (k String, v String) ENGINE = MergeTree ORDER BY k", params: {} });

async function writeEveryWay(store: ClickHouseStore, value: string): Promise<void> {
  await store.insert("test_kv_json", "kv", [{ k: "json", v: value }]);
  await store.insertRowBinary("test_kv_binary", "kv", ["k", "v"], new RowBinaryWriter().string("binary").string(value).bytes());
  const pb = new ParamBuilder();
  await store.command("test_kv_values", { sql: `INSERT INTO kv (k, v) VALUES ('values', ${pb.str(value)})`, params: pb.params });
}

const readAll = (store: ClickHouseStore) => store.rows<{ k: string; v: string }>("test_kv_read", { sql: "SELECT k, v FROM kv ORDER BY k", params: {} });

describe("the store", () => {
  it("keeps to its own database for every kind of statement, two stores at once", async () => {
    await Promise.all([createTable(first), createTable(second)]);
    await Promise.all([writeEveryWay(first, "first ✓"), writeEveryWay(second, "second \u00ff")]);
    const [a, b] = await Promise.all([readAll(first), readAll(second)]);
    expect(a).toEqual(["binary", "json", "values"].map((k) => ({ k, v: "first ✓" })));
    expect(b).toEqual(["binary", "json", "values"].map((k) => ({ k, v: "second \u00ff" })));
  });

  it("reports a statement the server refuses as a query error with the server's code", async () => {
    const unknownTable = first.rows("test_unknown_table", { sql: "SELECT * FROM no_such_table", params: {} });
    await expect(unknownTable).rejects.toBeInstanceOf(StoreQueryError);
    await expect(unknownTable).rejects.toMatchObject({ code: 60 });
    await expect(first.command("test_syntax", { sql: "SELEC 1", params: {} })).rejects.toMatchObject({ code: 62 });
  });

  it("reports a server it cannot reach as unavailable", async () => {
    const nowhere = new ClickHouseStore(`http://127.0.0.1:${await freePort()}`, "default");
    try {
      await expect(nowhere.rows("test_nowhere", { sql: "SELECT 1", params: {} })).rejects.toBeInstanceOf(StoreUnavailableError);
    } finally {
      await nowhere.close();
    }
  });

  it("reports a remote server (a shard) that no replica of answers as unavailable, not as a refused query", async () => {
    const shardDown = first.rows("test_shard_down", { sql: `SELECT * FROM remote('127.0.0.1:${await freePort()}', system.one)`, params: {} });
    await expect(shardDown).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
