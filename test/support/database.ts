import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { ClickHouseStore } from "../../services/store/clickhouse.js";
import { ensureDatabase, migrate } from "../../services/store/migrations.js";
import { MIGRATIONS } from "../../services/roles.js";

/** A fresh, migrated database on the suite's ClickHouse, private to one test file. */
export async function freshStore(): Promise<ClickHouseStore> {
  const url = inject("clickhouseUrl");
  const database = `t_${randomBytes(6).toString("hex")}`;
  await ensureDatabase(url, database);
  const store = new ClickHouseStore(url, database);
  await migrate(store, MIGRATIONS);
  return store;
}
