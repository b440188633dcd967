/**
 * The schema on a real ClickHouse 18.16 cluster (2 shards x 2 replicas, ZooKeeper: the
 * cluster run's harness): migrations on a fresh database and on one left at an older version,
 * and where the service's rows land (each project on one shard, on both its replicas).
 */
import { randomBytes } from "node:crypto";
import { describe, expect, inject, it } from "vitest";
import { MIGRATIONS } from "../../services/resources.js";
import { ClickHouseStore } from "../../services/store/clickhouse.js";
import { ensureDatabase, migrate } from "../../services/store/migrations.js";
import { suiteStoreOptions } from "../support/database.js";
import { client, iso, startTestService } from "../support/service.js";

const cluster = inject("clickhouseCluster")!;
const nodes = inject("clickhouseNodes")!;
const url = inject("clickhouseUrl");

/** A store on one node alone (its own tables, not the cluster's). */
const onNode = (nodeUrl: string, database: string) => new ClickHouseStore(nodeUrl, database);

async function tablesOn(nodeUrl: string, database: string): Promise<Map<string, string>> {
  const store = onNode(nodeUrl, "default");
  try {
    const rows = await store.rows<{ name: string; engine: string }>("t", { sql: `SELECT name, engine FROM system.tables WHERE database = '${database}'`, params: {} });
    return new Map(rows.map((r) => [r.name, r.engine]));
  } finally {
    await store.close();
  }
}

/** The columns of `table` on one node: type by name. */
async function columnsOn(nodeUrl: string, database: string, table: string): Promise<Map<string, string>> {
  const store = onNode(nodeUrl, "default");
  try {
    const rows = await store.rows<{ name: string; type: string }>("t", { sql: `SELECT name, type FROM system.columns WHERE database = '${database}' AND table = '${table}' ORDER BY name`, params: {} });
    return new Map(rows.map((r) => [r.name, r.type]));
  } finally {
    await store.close();
  }
}

async function freshClusterDatabase(): Promise<ClickHouseStore> {
  const database = `c_${randomBytes(6).toString("hex")}`;
  await ensureDatabase(url, database, cluster);
  return new ClickHouseStore(url, database, suiteStoreOptions());
}

describe("migrations on a cluster", () => {
  it("make every table, Replicated under a Distributed one, on every node; a second run (a restart) applies nothing", async () => {
    const store = await freshClusterDatabase();
    try {
      expect(await migrate(store, MIGRATIONS)).toEqual(MIGRATIONS.map((m) => m.version));
      const single = new Set(["schema_migrations", ...MIGRATIONS.flatMap((m) => m.statements).flatMap((s) => /^\s*CREATE TABLE IF NOT EXISTS (\w+)/.exec(s)?.[1] ?? [])]);
      for (const node of nodes) {
        const tables = await tablesOn(node.url, store.database);
        for (const table of single) {
          expect(tables.get(table), `${node.name} ${table}`).toBe("Distributed");
          expect(tables.get(`${table}_local`), `${node.name} ${table}_local`).toMatch(/^Replicated\w*MergeTree$/);
        }
        expect([...tables.values()].filter((e) => e === "MaterializedView").length).toBeGreaterThan(0);
      }
      expect(await migrate(store, MIGRATIONS)).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("bring a database left at an older version up to date: added and retyped columns reach the local and the Distributed tables of every node, rows kept", async () => {
    const store = await freshClusterDatabase();
    try {
      const withAddedColumns = MIGRATIONS.find((m) => (m.columns ?? []).length > 0)!;
      const older = MIGRATIONS.filter((m) => m.version < withAddedColumns.version);
      await migrate(store, older);
      const { table, column } = withAddedColumns.columns![0]!;
      for (const node of nodes) expect((await columnsOn(node.url, store.database, table)).has(column)).toBe(false);
      await store.command("t", { sql: `INSERT INTO ${table} (project_id, id, started_at) VALUES ('acme/old', 'kept', 1)`, params: {} });

      expect(await migrate(store, MIGRATIONS)).toEqual(MIGRATIONS.filter((m) => m.version >= withAddedColumns.version).map((m) => m.version));
      const retyped = MIGRATIONS.flatMap((m) => m.columns ?? []).find((c) => c.table === table && c.column === "json_paths")!;
      for (const node of nodes) {
        for (const name of [table, `${table}_local`]) {
          const columns = await columnsOn(node.url, store.database, name);
          expect(columns.has(column)).toBe(true);
          expect(columns.get(retyped.column)).toBe(retyped.type);
        }
      }
      expect(await store.rows("t", { sql: `SELECT id, ${column} FROM ${table} WHERE project_id = 'acme/old'`, params: {} })).toEqual([{ id: "kept", [column]: [] }]);
    } finally {
      await store.close();
    }
  });
});

describe("the service's rows on the cluster", () => {
  it("put each project's calls on one shard, on both its replicas, and answer as one server would", async () => {
    const service = await startTestService();
    const projects = Array.from({ length: 8 }, (_, i) => `acme/spread-${i}`);
    try {
      const api = client(service.url);
      for (const [i, project] of projects.entries()) {
        const batch = [0, 1, 2].map((n) => ({ mode: "start", req: { start: { project_id: project, id: `c${n}`, op_name: "op", trace_id: "t", started_at: iso(Date.UTC(2026, 10, 27) + i * 10 + n), attributes: {}, inputs: {} } } }));
        const res = await api.post("/call/upsert_batch", { batch });
        expect(res.status, await res.text()).toBe(200);
      }
      for (const project of projects) expect(await api.json("/calls/query_stats", { project_id: project })).toEqual({ count: 3 });

      const perNode = new Map<string, Map<string, number>>();
      for (const node of nodes) {
        const store = onNode(node.url, service.database);
        try {
          await store.command("t", { sql: "SYSTEM SYNC REPLICA calls_local", params: {} });
          const rows = await store.rows<{ project_id: string; n: string }>("t", { sql: "SELECT project_id, count() AS n FROM calls_local FINAL GROUP BY project_id", params: {} });
          perNode.set(node.name, new Map(rows.map((r) => [r.project_id, Number(r.n)])));
        } finally {
          await store.close();
        }
      }
      const shardOf = new Map<string, number>();
      for (const project of projects) {
        const holders = nodes.filter((n) => perNode.get(n.name)!.get(project) === 3);
        expect(holders.length, project).toBe(2);
        expect(holders[0]!.shard, project).toBe(holders[1]!.shard);
        shardOf.set(project, holders[0]!.shard);
      }
      expect(new Set(shardOf.values()).size).toBe(2);
    } finally {
      await service.stop();
    }
  });
});

describe("reads on the cluster", () => {
  it("see the writes before them through either replica of a shard, while the second replica has fetched nothing", async () => {
    const setup = await freshClusterDatabase();
    const { database } = setup;
    const second = nodes.filter((n) => nodes.find((m) => m.shard === n.shard) !== n);
    const through = (node: (typeof nodes)[number]) => new ClickHouseStore(node.url, database, suiteStoreOptions());
    const stores = nodes.map(through);
    try {
      await setup.command("t", { sql: `CREATE TABLE ${database}.seen_local ON CLUSTER ${cluster} (project_id String, n UInt32) ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/${database}/seen_local', '{replica}') ORDER BY (project_id, n)`, params: {} });
      await setup.command("t", { sql: `CREATE TABLE ${database}.seen ON CLUSTER ${cluster} AS ${database}.seen_local ENGINE = Distributed(${cluster}, ${database}, seen_local, cityHash64(project_id))`, params: {} });
      for (const node of second) await onNode(node.url, database).command("t", { sql: "SYSTEM STOP FETCHES seen_local", params: {} });
      const projects = Array.from({ length: 6 }, (_, i) => `acme/seen-${i}`);
      await stores[0]!.insert("t", "seen", projects.flatMap((project_id) => [1, 2, 3].map((n) => ({ project_id, n }))));
      for (const [i, store] of stores.entries()) {
        const rows = await store.rows<{ project_id: string; c: string }>("t", { sql: "SELECT project_id, count() AS c FROM seen GROUP BY project_id ORDER BY project_id", params: {} });
        expect(rows.map((r) => [r.project_id, Number(r.c)]), nodes[i]!.name).toEqual(projects.map((p) => [p, 3]));
      }
      for (const node of second) {
        const local = await onNode(node.url, database).rows<{ c: string }>("t", { sql: "SELECT count() AS c FROM seen_local", params: {} });
        expect(Number(local[0]!.c), `${node.name} fetched nothing`).toBe(0);
      }
    } finally {
      for (const node of second) await onNode(node.url, database).command("t", { sql: "SYSTEM START FETCHES seen_local", params: {} });
      await Promise.all([setup, ...stores].map((s) => s.close()));
    }
  });
});
