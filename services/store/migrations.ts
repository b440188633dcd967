import type { ClickHouseStore, InjectedClickHouse } from "./clickhouse.js";
import { clusterCreateDatabase, clusterMigrations, localTableName, onAlterCluster, type DistributedTable } from "./clusterSchema.js";
import { ParamBuilder } from "./sql.js";

/**
 * Versioned schema migrations. Every statement is idempotent (IF NOT EXISTS), so running
 * them at every start, from several processes at once, is safe: a race only repeats
 * no-ops. The applied versions are recorded in `schema_migrations` for operators. Versions
 * are unique across resources (see the table in services/resources.ts).
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly string[];
  /** Columns of existing tables as they are after this migration, settled after the statements (see settleColumn). */
  readonly columns?: readonly TableColumn[];
  /** The cluster form only: Distributed tables made again over their altered local tables, after the columns (see redistribute). */
  readonly redistribute?: readonly DistributedTable[];
}

/** A column of an existing table and its type. */
export interface TableColumn {
  readonly table: string;
  readonly column: string;
  readonly type: string;
}

/** The columns of `table` in the store's database, as this node sees them: name and type, by name. */
async function columnsOf(store: ClickHouseStore, version: number, table: string): Promise<string[]> {
  const pb = new ParamBuilder();
  const rows = await store.rows<{ name: string; type: string }>(`migrate_${version}_columns`, {
    sql: `SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = ${pb.str(table)} ORDER BY name`,
    params: pb.params,
  });
  return rows.map((r) => `${r.name} ${r.type}`);
}

/**
 * A column made what `TableColumn` says: `ALTER TABLE ... ADD COLUMN` where system.columns
 * does not list it (ClickHouse 18.16 has no `ADD COLUMN IF NOT EXISTS`), `MODIFY COLUMN` where
 * it lists another type (ClickHouse rewrites the column in every part, during the ALTER), and
 * nothing where it agrees. When another process alters it first, the ALTER may fail with the
 * column as it should be: that is success. On a cluster, `table` is a replicated local table:
 * the ALTER runs `ON CLUSTER` on the store's `alterCluster` (a replica per shard) and reaches
 * every replica.
 */
async function settleColumn(store: ClickHouseStore, version: number, { table, column, type }: TableColumn): Promise<void> {
  const current = async () => (await columnsOf(store, version, table)).find((c) => c.startsWith(`${column} `));
  const found = await current();
  if (found === `${column} ${type}`) return;
  const change = found === undefined ? "ADD" : "MODIFY";
  try {
    await store.command(`migrate_${version}`, { sql: `ALTER TABLE ${quoteIdentifier(table)}${onAlterCluster(store)} ${change} COLUMN ${quoteIdentifier(column)} ${type}`, params: {} });
  } catch (err) {
    if ((await current()) !== `${column} ${type}`) throw err;
  }
}

/**
 * A Distributed table made again over its local table where their columns differ (after an
 * added or retyped column): dropped and created on every node. Skipped where they agree, so a
 * second run, or a second process, leaves a table in use alone. Between the drop and the
 * create the table is missing: run a migration that settles columns from one process before
 * starting the others.
 */
async function redistribute(store: ClickHouseStore, version: number, distributed: DistributedTable): Promise<void> {
  const [local, current] = await Promise.all([columnsOf(store, version, localTableName(distributed.table)), columnsOf(store, version, distributed.table)]);
  if (local.join(",") === current.join(",")) return;
  const sql = `DROP TABLE IF EXISTS ${quoteIdentifier(store.database)}.${quoteIdentifier(distributed.table)} ON CLUSTER ${quoteIdentifier(store.cluster!)}`;
  await store.command(`migrate_${version}`, { sql, params: {} });
  await store.command(`migrate_${version}`, { sql: distributed.create, params: {} });
}

const BOOTSTRAP: Migration = {
  version: 0,
  name: "schema_migrations",
  statements: [
    `CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, applied_at DateTime DEFAULT now())
          ENGINE = ReplacingMergeTree() ORDER BY version`,
  ],
};

/**
 * The statements to run: as written, or on a cluster (`store.cluster`) their cluster form
 * (store/clusterSchema.ts), the bootstrap table first.
 */
export function migrationsFor(store: Pick<ClickHouseStore, "cluster" | "database">, migrations: readonly Migration[]): { bootstrap: Migration; migrations: Migration[] } {
  if (store.cluster === null) return { bootstrap: BOOTSTRAP, migrations: [...migrations] };
  const [bootstrap, ...rest] = clusterMigrations([BOOTSTRAP, ...migrations], { cluster: store.cluster, database: store.database });
  return { bootstrap: bootstrap!, migrations: rest };
}

/**
 * Applies the migrations not yet recorded, in version order, and records them in one insert
 * at the end (a round trip, and a part, per migration made a fresh database's start several
 * times slower; one that fails midway leaves the ones before unrecorded, which only repeats
 * their no-ops next time). The list comes from the resource table (services/resources.ts):
 * each resource's store folder exports its own.
 */
export async function migrate(store: ClickHouseStore, resourceMigrations: readonly Migration[]): Promise<number[]> {
  const { bootstrap, migrations } = migrationsFor(store, resourceMigrations);
  for (const statement of bootstrap.statements) await store.command("migrate_bootstrap", { sql: statement, params: {} });
  const done = new Set(
    (await store.rows<{ version: number }>("migrate_applied", { sql: "SELECT DISTINCT version FROM schema_migrations", params: {} })).map(
      (r) => Number(r.version),
    ),
  );
  const applied: Migration[] = [];
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(migration.version)) continue;
    for (const statement of migration.statements) await store.command(`migrate_${migration.version}`, { sql: statement, params: {} });
    for (const column of migration.columns ?? []) await settleColumn(store, migration.version, column);
    for (const distributed of migration.redistribute ?? []) await redistribute(store, migration.version, distributed);
    applied.push(migration);
  }
  if (applied.length > 0) await store.insert("migrate_record", "schema_migrations", applied.map(({ version, name }) => ({ version, name })));
  return applied.map((m) => m.version);
}

/** `target`: the HTTP interface's URL, or an injected connection; `cluster`: create it on every node of that cluster. */
export async function ensureDatabase(target: string | InjectedClickHouse, database: string, cluster?: string): Promise<void> {
  const { ClickHouseStore } = await import("./clickhouse.js");
  const root = new ClickHouseStore(target, "default");
  const sql = cluster ? clusterCreateDatabase({ cluster, database }) : `CREATE DATABASE IF NOT EXISTS ${quoteIdentifier(database)}`;
  try {
    await root.command("create_database", { sql, params: {} });
  } finally {
    await root.close();
  }
}

function quoteIdentifier(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`invalid identifier: ${name}`);
  return name;
}
