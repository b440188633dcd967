/**
 * The cluster form of the schema (`CLICKHOUSE_CLUSTER`), derived from the single-node
 * statements of each resource's migration, so that each table is written once:
 *
 * - `CREATE TABLE t (...) ENGINE = XMergeTree(args) ...` becomes `t_local ON CLUSTER` with
 *   `ReplicatedXMergeTree('/clickhouse/tables/{shard}/<database>/t_local', '{replica}', args)`
 *   and `t ON CLUSTER AS t_local ENGINE = Distributed(<cluster>, <database>, t_local, cityHash64(<first sort column>))`.
 *   The code reads and writes `t` as before. Every table's sort key starts with
 *   `project_id` (but the migrations' own table), so all of a project's rows live on one
 *   shard: `FINAL` collapses the versions of a row within its shard, and joins and `IN`
 *   subqueries between tables stay on the shard (`distributed_product_mode = 'local'`).
 * - `CREATE MATERIALIZED VIEW v TO t AS SELECT ... FROM s` is made on every node over the
 *   local tables (`TO t_local`, `FROM s_local`): an insert forwarded to a shard feeds the
 *   view there.
 * - `INSERT ... SELECT` (backfills) runs once, through the Distributed tables.
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
const ENGINE = /^\s*ENGINE\s*=\s*([A-Za-z]*MergeTree)\b/;
const FIRST_SORT_COLUMN = /\bORDER BY\s*\(?\s*([A-Za-z_][A-Za-z0-9_]*)/;

export const localTableName = (table: string): string => `${table}_local`;

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

function clusterTable(statement: string, table: string, layout: ClusterLayout): string[] {
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
  return [
    `CREATE TABLE IF NOT EXISTS ${local} ON CLUSTER ${layout.cluster} ${columns} ENGINE = ${replicated}${rest.slice(afterEngine)}`,
    `CREATE TABLE IF NOT EXISTS ${table} ON CLUSTER ${layout.cluster} AS ${local} ENGINE = Distributed(${layout.cluster}, ${layout.database}, ${local}, cityHash64(${sortColumn}))`,
  ];
}

function clusterView(view: string, target: string, select: string, layout: ClusterLayout, tables: ReadonlySet<string>): string {
  if (!tables.has(target)) throw new Error(`materialized view ${view} writes to ${target}, which no earlier migration creates`);
  const localSelect = select.replace(/\bFROM\s+([A-Za-z_][A-Za-z0-9_]*)/g, (whole, source: string) => (tables.has(source) ? `FROM ${localTableName(source)}` : whole));
  return `CREATE MATERIALIZED VIEW IF NOT EXISTS ${view} ON CLUSTER ${layout.cluster} TO ${localTableName(target)} AS${localSelect}`;
}

/**
 * The cluster form of one single-node statement. `tables` holds the tables created so far
 * (this adds the ones `statement` creates), so that views can name their local tables.
 */
export function clusterStatements(statement: string, layout: ClusterLayout, tables: Set<string>): string[] {
  const table = CREATE_TABLE.exec(statement);
  if (table) {
    tables.add(table[1]!);
    return clusterTable(statement, table[1]!, layout);
  }
  const view = CREATE_VIEW.exec(statement);
  if (view) return [clusterView(view[1]!, view[2]!, view[3]!, layout, tables)];
  if (/^\s*INSERT INTO\b/.test(statement)) return [statement];
  throw new Error(`no cluster form for the statement: ${statement.trim().slice(0, 80)}`);
}

/** Every migration in its cluster form, same versions and names. */
export function clusterMigrations<M extends ClusterMigrationInput>(migrations: readonly M[], layout: ClusterLayout, tables = new Set<string>()): M[] {
  checkLayout(layout);
  return [...migrations].sort((a, b) => a.version - b.version).map((m) => ({
    ...m,
    statements: [...m.statements.flatMap((s) => clusterStatements(s, layout, tables)), ...(m.addColumns ?? []).flatMap((c) => clusterAddColumn(c, layout))],
    addColumns: [],
  }));
}

interface ClusterMigrationInput {
  readonly version: number;
  readonly statements: readonly string[];
  readonly addColumns?: readonly { readonly table: string; readonly column: string; readonly type: string }[];
}

/**
 * A column added to an existing table, on the local table and the Distributed one over it. A
 * cluster needs Keeper, hence a server that knows `ADD COLUMN IF NOT EXISTS` (18.16 does not:
 * the single-node form checks system.columns instead).
 */
function clusterAddColumn(added: { readonly table: string; readonly column: string; readonly type: string }, layout: ClusterLayout): string[] {
  return [localTableName(added.table), added.table].map((t) => `ALTER TABLE ${t} ON CLUSTER ${layout.cluster} ADD COLUMN IF NOT EXISTS ${added.column} ${added.type}`);
}

/** `CREATE DATABASE` on every node of the cluster. */
export function clusterCreateDatabase(layout: ClusterLayout): string {
  checkLayout(layout);
  return `CREATE DATABASE IF NOT EXISTS ${layout.database} ON CLUSTER ${layout.cluster}`;
}
