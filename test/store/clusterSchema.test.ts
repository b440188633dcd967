import { describe, expect, it } from "vitest";
import { MIGRATIONS } from "../../services/resources.js";
import { clusterCreateDatabase, clusterMigrations, clusterStatements } from "../../services/store/clusterSchema.js";
import { migrate, migrationsFor } from "../../services/store/migrations.js";
import { freshStore } from "../support/database.js";

const layout = { cluster: "tracehouse_cluster", database: "tracehouse" };
const singleNode = { cluster: null, database: "tracehouse" };
const clusterStore = { cluster: layout.cluster, database: layout.database };

const createdTable = (sql: string) => /^\s*CREATE TABLE IF NOT EXISTS (?:\w+\.)?(\w+)/.exec(sql)?.[1] ?? null;
const allStatements = (ms: readonly { statements: readonly string[] }[]) => ms.flatMap((m) => m.statements);

describe("schema migrations, single node (as run by every test on this server)", () => {
  it("are the resources' statements unchanged, and a second run applies nothing", async () => {
    const { bootstrap, migrations } = migrationsFor(singleNode, MIGRATIONS);
    expect(allStatements(migrations)).toEqual(allStatements([...MIGRATIONS].sort((a, b) => a.version - b.version)));
    expect(bootstrap.statements.join("")).not.toContain("ON CLUSTER");
    const store = await freshStore();
    try {
      expect(await migrate(store, MIGRATIONS)).toEqual([]);
      const tables = (await store.rows<{ name: string }>("t", { sql: "SELECT name FROM system.tables WHERE database = currentDatabase()", params: {} })).map((r) => r.name);
      const expected = allStatements(MIGRATIONS).map(createdTable).filter((t): t is string => t !== null);
      expect(tables).toEqual(expect.arrayContaining([...expected, "schema_migrations"]));
      expect(tables.some((t) => t.endsWith("_local"))).toBe(false);
    } finally {
      await store.close();
    }
  });
});

describe("schema migrations, cluster form (CLICKHOUSE_CLUSTER; the text here, run on a real cluster in test/cluster/)", () => {
  const { bootstrap, migrations } = migrationsFor(clusterStore, MIGRATIONS);
  const statements = [...bootstrap.statements, ...allStatements(migrations)];
  const ddl = statements.filter((s) => /^\s*CREATE\b/.test(s));
  const singleTables = ["schema_migrations", ...allStatements(MIGRATIONS).map(createdTable).filter((t): t is string => t !== null)];

  it("keeps the versions and names, and says ON CLUSTER in every DDL statement", () => {
    expect(migrations.map((m) => [m.version, m.name])).toEqual([...MIGRATIONS].sort((a, b) => a.version - b.version).map((m) => [m.version, m.name]));
    expect(ddl.length).toBeGreaterThan(singleTables.length);
    for (const s of ddl) expect(s).toContain(`ON CLUSTER ${layout.cluster}`);
    expect(clusterCreateDatabase(layout)).toBe("CREATE DATABASE IF NOT EXISTS tracehouse ON CLUSTER tracehouse_cluster");
  });

  it("makes each table a Replicated local table and a Distributed table of the same name over it, sharded by its first sort column", () => {
    for (const table of singleTables) {
      const local = ddl.filter((s) => createdTable(s) === `${table}_local`);
      const distributed = ddl.filter((s) => createdTable(s) === table);
      expect(local, table).toHaveLength(1);
      expect(distributed, table).toHaveLength(1);
      expect(local[0]).toMatch(new RegExp(`ENGINE = Replicated(Replacing|Aggregating)?MergeTree\\('/clickhouse/tables/\\{shard\\}/tracehouse/${table}_local', '\\{replica\\}'`));
      expect(local[0]).toMatch(new RegExp(`^CREATE TABLE IF NOT EXISTS tracehouse\\.${table}_local ON CLUSTER tracehouse_cluster \\(`));
      expect(distributed[0]).toMatch(new RegExp(`^CREATE TABLE IF NOT EXISTS tracehouse\\.${table} ON CLUSTER tracehouse_cluster AS tracehouse\\.${table}_local ENGINE = Distributed\\(tracehouse_cluster, tracehouse, ${table}_local, cityHash64\\((project_id|version|id|job_id|model_id|entity)\\)\\)$`));
    }
    const engines = ddl.filter((s) => createdTable(s)?.endsWith("_local")).map((s) => /ENGINE = (\w+)/.exec(s)![1]);
    expect(engines.every((e) => e!.startsWith("Replicated"))).toBe(true);
  });

  it("adds the columns of a later migration to each local table, and makes the Distributed table over it again", () => {
    const added = MIGRATIONS.flatMap((m) => (m.columns ?? []).map((c) => ({ version: m.version, ...c })));
    expect(added.length).toBeGreaterThan(0);
    for (const { version, table, column, type } of added) {
      const migration = migrations.find((m) => m.version === version)!;
      expect(migration.columns).toContainEqual({ table: `${table}_local`, column, type });
      const distributed = ddl.find((s) => createdTable(s) === table);
      expect(migration.redistribute).toContainEqual({ table, create: distributed });
    }
  });

  it("keeps engine arguments, partitioning, sort keys and settings of the single-node form", () => {
    const calls = ddl.find((s) => createdTable(s) === "calls_local")!;
    expect(calls).toContain("'{replica}', version)");
    expect(calls).toContain("PARTITION BY toYYYYMM(toDateTime(intDiv(started_at, 1000000)))");
    expect(calls).toContain("ORDER BY (project_id, started_at, id)");
    expect(calls).toContain("otel_dump Nullable(String)");
    expect(ddl.find((s) => createdTable(s) === "threads_local")).toContain("SETTINGS index_granularity = 256");
    expect(ddl.find((s) => createdTable(s) === "call_orphan_parts_local")).toContain("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/tracehouse/call_orphan_parts_local', '{replica}')");
  });

  it("builds materialized views on the local tables, and runs backfills through the Distributed ones", () => {
    const views = ddl.filter((s) => s.includes("MATERIALIZED VIEW"));
    expect(views.length).toBeGreaterThan(0);
    for (const v of views) {
      expect(v).toMatch(/^CREATE MATERIALIZED VIEW IF NOT EXISTS tracehouse\.\w+ ON CLUSTER tracehouse_cluster TO tracehouse\.\w+_local AS/);
      for (const [, source] of v.matchAll(/\bFROM\s+([\w.]+)/g)) expect(source).toMatch(/^tracehouse\.\w+_local$/);
    }
    const drops = statements.filter((s) => /^\s*DROP\b/.test(s));
    expect(drops).toContain("DROP TABLE IF EXISTS tracehouse.call_ref_bounds_writer ON CLUSTER tracehouse_cluster");
    for (const d of drops) expect(d).toMatch(/^DROP TABLE IF EXISTS tracehouse\.\w+ ON CLUSTER tracehouse_cluster$/);
    const inserts = statements.filter((s) => /^\s*INSERT\b/.test(s));
    expect(inserts).toEqual(allStatements(MIGRATIONS).filter((s) => /^\s*INSERT\b/.test(s)));
  });

  it("refuses a statement it has no cluster form for, and bad names", () => {
    expect(() => clusterStatements("ALTER TABLE calls ADD COLUMN x UInt8", layout, new Map())).toThrow(/no cluster form/);
    const calls = new Map([["calls", { table: "calls", create: "" }]]);
    expect(() => clusterStatements("DROP TABLE IF EXISTS calls", layout, calls)).toThrow(/only a view/);
    expect(() => clusterMigrations([{ version: 1, statements: ["SELECT 1"] }], { cluster: "a; DROP", database: "x" })).toThrow(/invalid ClickHouse identifier/);
  });

  it("parses on this server where it can parse without running (EXPLAIN AST, 20.6 on; reported skipped on 18.16)", async (ctx) => {
    const store = await freshStore();
    try {
      const explainable = await store.rows("t", { sql: "EXPLAIN AST SELECT 1", params: {} }).then(() => true, () => false);
      if (!explainable) ctx.skip("this server has no EXPLAIN AST (before 20.6)");
      // Run for its parse only, its text not read: 26.x's JSON output of an AST with `\\s` in a literal is not valid JSON.
      for (const s of statements) await store.command("t", { sql: `EXPLAIN AST ${s}`, params: {} });
    } finally {
      await store.close();
    }
  });
});
