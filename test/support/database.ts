import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { StoreQueryError } from "../../services/errors.js";
import { ClickHouseStore, type InjectedClickHouse, type StoreOptions } from "../../services/store/clickhouse.js";
import { ensureDatabase, migrate } from "../../services/store/migrations.js";
import { MIGRATIONS } from "../../services/resources.js";
import { until } from "./polling.js";

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

/** The store's options in this run: its cluster and where ALTERs run (none on a single node). */
export function suiteStoreOptions(): StoreOptions {
  return { cluster: suiteCluster(), alterCluster: inject("clickhouseAlterCluster") };
}

/** A store on an existing database of the run's ClickHouse. */
export async function storeOn(database: string): Promise<ClickHouseStore> {
  return new ClickHouseStore(await suiteClickHouse(), database, suiteStoreOptions());
}

/** A fresh, empty database on the suite's ClickHouse, private to one test: migrations are the caller's. */
export async function emptyStore(): Promise<ClickHouseStore> {
  const target = await suiteClickHouse();
  const database = `t_${randomBytes(6).toString("hex")}`;
  await ensureDatabase(target, database, suiteCluster());
  return new ClickHouseStore(target, database, suiteStoreOptions());
}

/** A fresh, migrated database on the suite's ClickHouse, private to one test file. */
export async function freshStore(): Promise<ClickHouseStore> {
  const store = await emptyStore();
  await migrate(store, MIGRATIONS);
  return store;
}

/** How long a replica may take to pull and apply what its shard's leader logged. */
const REPLICATED_WITHIN_MS = 60_000;

/**
 * Waits until the node's replica of `local` pulled every entry of its shard's replication log
 * and applied it (its queue empty, merges included): what `SYSTEM SYNC REPLICA` waits for,
 * read from system.replicas.
 */
async function replicated(node: ClickHouseStore, local: string): Promise<void> {
  const caughtUp = async () => {
    const [replica] = await node.rows<{ behind: number }>("test_replica_behind", {
      // An empty log has log_pointer = log_max_index = 0: nothing to pull.
      sql: `SELECT queue_size > 0 OR (log_pointer <= log_max_index AND log_pointer + log_max_index > 0) AS behind FROM system.replicas WHERE database = currentDatabase() AND table = '${local}'`,
      params: {},
    });
    return replica !== undefined && Number(replica.behind) === 0;
  };
  await until(caughtUp, { timeoutMs: REPLICATED_WITHIN_MS, everyMs: 100, what: `${node.url}: ${local} to be replicated` });
}

const OPTIMIZE_TRIES = 10;

/**
 * `OPTIMIZE TABLE <local> FINAL` on its shard's leader, once the replica's queue is empty. When
 * the leader cannot select the parts now (a merge of some of them started meanwhile), 18.16
 * fails with code 49 ("Unknown log entry type: 0": it waits on a merge entry it never made)
 * rather than "cannot select parts": tried again a moment later.
 */
async function optimizeOnLeader(node: ClickHouseStore, local: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await replicated(node, local);
    try {
      return await node.command("test_optimize", { sql: `OPTIMIZE TABLE ${local} FINAL`, params: {} });
    } catch (err) {
      if (!(err instanceof StoreQueryError && err.code === 49) || attempt === OPTIMIZE_TRIES) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
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
      if (leader.some((r) => Number(r.is_leader) === 1)) await optimizeOnLeader(node, local);
    }
    for (const node of onNodes) await replicated(node, local);
  } finally {
    await Promise.all(onNodes.map((n) => n.close()));
  }
}
