import type { ClickHouseStore } from "../clickhouse.js";
import { partsSource } from "../clusterSchema.js";
import { ParamBuilder } from "../sql.js";

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Disk used by a project's data, estimated: for every table of the database with a
 * `project_id` column, the bytes of its active parts (compressed, as on disk) times the
 * project's share of the table's rows. Rows are counted as stored, unmerged versions
 * included, on both sides of the share. Shared data (tables without `project_id`, the
 * schema, ClickHouse's own files) is counted for no project. On a cluster, the parts of
 * every shard (one replica each) and the rows through the Distributed tables.
 */
export async function projectStorageBytes(store: ClickHouseStore, projectId: string): Promise<number> {
  const parts = partsSource(store.cluster);
  const local = parts.table("");
  const pbParts = new ParamBuilder();
  const database = pbParts.str(store.database);
  const tables = (
    await store.rows<{ table: string; bytes: string; rows: string }>("project_storage_tables", {
      sql: `SELECT table, sum(bytes_on_disk) AS bytes, sum(rows) AS rows FROM ${parts.from}
            WHERE database = ${database} AND active
              AND table IN (SELECT table FROM system.columns WHERE database = ${database} AND name = 'project_id')
            GROUP BY table HAVING rows > 0`,
      params: pbParts.params,
    })
  )
    .filter((t) => t.table.endsWith(local))
    .map((t) => ({ ...t, table: t.table.slice(0, t.table.length - local.length) }))
    .filter((t) => TABLE_NAME.test(t.table));
  if (tables.length === 0) return 0;
  const pb = new ParamBuilder();
  const project = pb.str(projectId);
  const counts = await store.rows<{ table: string; rows: string }>("project_storage_rows", {
    sql: tables.map((t) => `SELECT ${pb.str(t.table)} AS table, count() AS rows FROM ${t.table} WHERE project_id = ${project}`).join("\nUNION ALL\n"),
    params: pb.params,
  });
  const projectRows = new Map(counts.map((c) => [c.table, Number(c.rows)]));
  let total = 0;
  for (const t of tables) total += (Number(t.bytes) * (projectRows.get(t.table) ?? 0)) / Number(t.rows);
  return Math.round(total);
}
