import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { ClickHouseStore, type InjectedClickHouse } from "../../services/store/clickhouse.js";
import { ensureDatabase, migrate } from "../../services/store/migrations.js";
import { MIGRATIONS } from "../../services/roles.js";

/**
 * The ClickHouse of this run: the real server's URL, or chdb in this process in the
 * compatibility run (loaded only then: it is a large native library).
 */
export async function suiteClickHouse(): Promise<string | InjectedClickHouse> {
  const chdbDir = inject("chdbDir");
  if (!chdbDir) return inject("clickhouseUrl");
  const { chdbClickHouse } = await import("./chdb.js");
  return chdbClickHouse(chdbDir);
}

/** The cluster run's ClickHouse cluster (CLICKHOUSE_CLUSTER), else undefined. */
export function suiteCluster(): string | undefined {
  return inject("clickhouseCluster");
}

/** A store on an existing database of the run's ClickHouse. */
export async function storeOn(database: string): Promise<ClickHouseStore> {
  return new ClickHouseStore(await suiteClickHouse(), database, { cluster: suiteCluster() });
}

/** A fresh, migrated database on the suite's ClickHouse, private to one test file. */
export async function freshStore(): Promise<ClickHouseStore> {
  const target = await suiteClickHouse();
  const database = `t_${randomBytes(6).toString("hex")}`;
  await ensureDatabase(target, database, suiteCluster());
  const store = new ClickHouseStore(target, database, { cluster: suiteCluster() });
  await migrate(store, MIGRATIONS);
  return store;
}

/**
 * `OPTIMIZE TABLE <table> FINAL`: its parts merged now. On the cluster run, where the table is
 * Distributed (which cannot be optimized), the local table is optimized on each shard's
 * leader replica (the others refuse, code 49), then every replica waits until it has the merge.
 */
export async function optimizeFinal(store: ClickHouseStore, table: string): Promise<void> {
  const nodes = inject("clickhouseNodes");
  if (!suiteCluster() || !nodes) return store.command("test_optimize", { sql: `OPTIMIZE TABLE ${table} FINAL`, params: {} });
  const local = `${table}_local`;
  const onNodes = nodes.map((n) => new ClickHouseStore(n.url, store.database));
  try {
    for (const node of onNodes) {
      const leader = await node.rows<{ is_leader: number }>("test_leader", { sql: `SELECT is_leader FROM system.replicas WHERE database = currentDatabase() AND table = '${local}'`, params: {} });
      if (leader.some((r) => Number(r.is_leader) === 1)) await node.command("test_optimize", { sql: `OPTIMIZE TABLE ${local} FINAL`, params: {} });
    }
    for (const node of onNodes) await node.command("test_sync_replica", { sql: `SYSTEM SYNC REPLICA ${local}`, params: {} });
  } finally {
    await Promise.all(onNodes.map((n) => n.close()));
  }
}
