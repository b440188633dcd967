/**
 * The cluster form of the schema (`CLICKHOUSE_CLUSTER`), derived from the single-node
 * statements of each resource's migration, so that each table is written once. Every name is
 * qualified with the database: distributed DDL runs on each node in the `default` database.
 *
 * - `CREATE TABLE t (...) ENGINE = XMergeTree(args) ...` becomes `db.t_local ON CLUSTER` with
 *   `ReplicatedXMergeTree('/clickhouse/tables/{shard}/<database>/t_local', '{replica}', args)`
 *   and `db.t ON CLUSTER AS db.t_local ENGINE = Distributed(<cluster>, <database>, t_local, cityHash64(<first sort column>))`.
 *   The code reads and writes `t` as before. Every table's sort key starts with
 *   `project_id` (but the migrations' own table and the jobs', training's and projects',
 *   whose related tables share their first key), so all of a project's rows live on one
 *   shard: `FINAL` collapses the versions of a row within its shard, and joins and `IN`
 *   subqueries between tables stay on the shard (`distributed_product_mode = 'local'`).
 * - `CREATE MATERIALIZED VIEW v TO t AS SELECT ... FROM s` is made on every node over the
 *   local tables (`TO db.t_local`, `FROM db.s_local`): an insert forwarded to a shard feeds
 *   the view on the replica that takes it, and the view's table replicates its rows.
 * - `DROP TABLE IF EXISTS v` of a view (made again under another name) is dropped `ON CLUSTER`
 *   from every node; a table's drop has no cluster form (it is two tables there).
 * - `INSERT ... SELECT` (backfills) runs once, through the Distributed tables.
 * - A column added to an existing table, or given another type (`columns`), is altered in
 *   its local table `ON CLUSTER` (a replicated ALTER, run once per shard). The Distributed
 *   table over it cannot be altered so on 18.16 (an ALTER of a table that is not
 *   replicated, on a cluster whose shards are, is refused: code 371), so it is made again
 *   over the altered local table (`redistribute`): dropped and created, on every node, only
 *   where its columns differ.
 * Any other statement has no cluster form yet and is refused (a new migration kind must
 * say how it runs on a cluster).
 */
export interface ClusterLayout {
  readonly cluster: string;
  readonly database: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
const CREATE_TABLE = /^\s*CREATE TABLE IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*)\s*\(/;
const CREATE_VIEW = /^\s*CREATE MATERIALIZED VIEW IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*) TO ([A-Za-z_][A-Za-z0-9_]*) AS\b([\s\S]*)$/;
const DROP_VIEW = /^\s*DROP TABLE IF EXISTS ([A-Za-z_][A-Za-z0-9_]*)\s*$/;
const ENGINE = /^\s*ENGINE\s*=\s*([A-Za-z]*MergeTree)\b/;
const FIRST_SORT_COLUMN = /\bORDER BY\s*\(?\s*([A-Za-z_][A-Za-z0-9_]*)/;

export const localTableName = (table: string): string => `${table}_local`;

/**
 * The clause that runs an ALTER of a Replicated local table on every shard: `ON CLUSTER` the
 * store's alter cluster (one replica per shard, replication does the rest); none on a single server.
 */
export const onAlterCluster = (store: { readonly alterCluster: string | null }): string => (store.alterCluster === null ? "" : ` ON CLUSTER ${store.alterCluster}`);

/**
 * A table named inside a mutation: on a cluster the mutation runs on each node, over its local
 * table, named with its database (distributed DDL runs in each node's `default` database).
 */
export const mutationTableRef = (store: { readonly cluster: string | null; readonly database: string }, table: string): string =>
  store.cluster === null ? table : `${store.database}.${localTableName(table)}`;

/** The table an `ALTER TABLE` (a mutation) runs on: the local tables of every shard on a cluster, else the table. */
export const alterTarget = (store: { readonly cluster: string | null; readonly alterCluster: string | null; readonly database: string }, table: string): string =>
  `${mutationTableRef(store, table)}${onAlterCluster(store)}`;

/**
 * Where the data parts of the database are listed: `system.parts` of this server, or on a
 * cluster of one replica of every shard (each shard holds its own rows; its replicas the same
 * ones), with the tables named `<table>_local`.
 */
export const partsSource = (cluster: string | null): { readonly from: string; readonly table: (name: string) => string } =>
  cluster === null ? { from: "system.parts", table: (name) => name } : { from: `cluster('${cluster}', system, parts)`, table: localTableName };

/** A Distributed table of the cluster form: its name and its `CREATE`, to make it again over an altered local table. */
export interface DistributedTable {
  readonly table: string;
  readonly create: string;
}

/** The tables created so far by the cluster form, by name: what views and altered columns refer to. */
export type ClusterTables = Map<string, DistributedTable>;

export function checkLayout(layout: ClusterLayout): void {
  for (const name of [layout.cluster, layout.database]) if (!IDENTIFIER.test(name)) throw new Error(`invalid ClickHouse identifier: ${name}`);
}

/** Index just past the parenthesis that closes the one opened at `open`. */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === "'") {
      i = text.indexOf("'", i + 1);
      if (i < 0) break;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return i + 1;
  }
  throw new Error(`unbalanced parentheses in: ${text.slice(0, 80)}`);
}

function clusterTable(statement: string, table: string, layout: ClusterLayout, tables: ClusterTables): string[] {
  const open = statement.indexOf("(", statement.indexOf(table) + table.length);
  const columnsEnd = closingParen(statement, open);
  const columns = statement.slice(open, columnsEnd);
  const rest = statement.slice(columnsEnd);
  const engine = ENGINE.exec(rest);
  if (!engine) throw new Error(`no MergeTree engine in the CREATE of ${table}`);
  let afterEngine = engine[0].length;
  let args = "";
  if (rest[afterEngine] === "(") {
    const argsEnd = closingParen(rest, afterEngine);
    args = rest.slice(afterEngine + 1, argsEnd - 1).trim();
    afterEngine = argsEnd;
  }
  const sortColumn = FIRST_SORT_COLUMN.exec(rest)?.[1];
  if (!sortColumn) throw new Error(`no ORDER BY in the CREATE of ${table}`);
  const local = localTableName(table);
  const path = `'/clickhouse/tables/{shard}/${layout.database}/${local}'`;
  const replicated = `Replicated${engine[1]}(${[path, "'{replica}'", args].filter(Boolean).join(", ")})`;
  const { database, cluster } = layout;
  const distributed = `CREATE TABLE IF NOT EXISTS ${database}.${table} ON CLUSTER ${cluster} AS ${database}.${local} ENGINE = Distributed(${cluster}, ${database}, ${local}, cityHash64(${sortColumn}))`;
  tables.set(table, { table, create: distributed });
  return [`CREATE TABLE IF NOT EXISTS ${database}.${local} ON CLUSTER ${cluster} ${columns} ENGINE = ${replicated}${rest.slice(afterEngine)}`, distributed];
}

function clusterView(view: string, target: string, select: string, layout: ClusterLayout, tables: ClusterTables): string {
  if (!tables.has(target)) throw new Error(`materialized view ${view} writes to ${target}, which no earlier migration creates`);
  const { database, cluster } = layout;
  const localSelect = select.replace(/\b(FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)\b(?!\.)/g, (whole, keyword: string, source: string) =>
    tables.has(source) ? `${keyword} ${database}.${localTableName(source)}` : whole,
  );
  return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${database}.${view} ON CLUSTER ${cluster} TO ${database}.${localTableName(target)} AS${localSelect}`;
}

function clusterDropView(view: string, layout: ClusterLayout, tables: ClusterTables): string {
  if (tables.has(view)) throw new Error(`no cluster form for dropping the table ${view}: only a view is dropped so`);
  return `DROP TABLE IF EXISTS ${layout.database}.${view} ON CLUSTER ${layout.cluster}`;
}

/**
 * The cluster form of one single-node statement. `tables` holds the tables created so far
 * (this adds the ones `statement` creates), so that views and altered columns can name their local tables.
 */
export function clusterStatements(statement: string, layout: ClusterLayout, tables: ClusterTables): string[] {
  const table = CREATE_TABLE.exec(statement);
  if (table) return clusterTable(statement, table[1]!, layout, tables);
  const view = CREATE_VIEW.exec(statement);
  if (view) return [clusterView(view[1]!, view[2]!, view[3]!, layout, tables)];
  const dropped = DROP_VIEW.exec(statement);
  if (dropped) return [clusterDropView(dropped[1]!, layout, tables)];
  if (/^\s*INSERT INTO\b/.test(statement)) return [statement];
  throw new Error(`no cluster form for the statement: ${statement.trim().slice(0, 80)}`);
}

/**
 * Every migration in its cluster form, same versions and names: its statements, its added
 * columns on the local tables, and the Distributed tables to make again over them.
 */
export function clusterMigrations<M extends ClusterMigrationInput>(migrations: readonly M[], layout: ClusterLayout, tables: ClusterTables = new Map()): M[] {
  checkLayout(layout);
  return [...migrations].sort((a, b) => a.version - b.version).map((m) => {
    const statements = m.statements.flatMap((s) => clusterStatements(s, layout, tables));
    const columns = m.columns ?? [];
    const redistribute = [...new Set(columns.map((c) => c.table))].map((table) => {
      const distributed = tables.get(table);
      if (!distributed) throw new Error(`migration ${m.version} alters a column of ${table}, which no earlier migration creates`);
      return distributed;
    });
    return { ...m, statements, columns: columns.map((c) => ({ ...c, table: localTableName(c.table) })), redistribute };
  });
}

interface ClusterMigrationInput {
  readonly version: number;
  readonly statements: readonly string[];
  readonly columns?: readonly { readonly table: string; readonly column: string; readonly type: string }[];
}

/** `CREATE DATABASE` on every node of the cluster. */
export function clusterCreateDatabase(layout: ClusterLayout): string {
  checkLayout(layout);
  return `CREATE DATABASE IF NOT EXISTS ${layout.database} ON CLUSTER ${layout.cluster}`;
}
