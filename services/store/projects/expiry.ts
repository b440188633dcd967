import type { ClickHouseStore } from "../clickhouse.js";
import { localTableName, partsSource } from "../clusterSchema.js";
import { ParamBuilder } from "../sql.js";
import { expiredCallIds } from "./retention.js";

/**
 * What the retention job deletes of a project's data past its cutoff (a `started_at` in µs),
 * table by table: `ALTER TABLE … DELETE` mutations (ClickHouse 18.16 has no TTL), which
 * ClickHouse applies in the background by rewriting the table's parts. The tables whose
 * condition reads `call_index` go before it: `call_index` is deleted only in a run that
 * found none of their rows left, so no feedback outlives the index rows that find it.
 */
interface ExpiringTable {
  readonly table: string;
  /** Rows of the project past the cutoff (both given as placeholders). */
  readonly expired: (project: string, cutoff: string, ref: (table: string) => string) => string;
  /** Tables that must hold no expired row before this one is deleted from. */
  readonly after?: readonly string[];
}

const EXPIRED_CALL_IDS = (project: string, cutoff: string, ref: (table: string) => string) => expiredCallIds(project, cutoff, ref("call_index"));

export const EXPIRING_TABLES: readonly ExpiringTable[] = [
  { table: "feedback", expired: (p, c, ref) => `call_id IN ${EXPIRED_CALL_IDS(p, c, ref)}` },
  { table: "call_deletions", expired: (p, c, ref) => `id IN ${EXPIRED_CALL_IDS(p, c, ref)}` },
  { table: "otel_log_records", expired: (_p, c) => `time < ${c}` },
  { table: "thread_turns", expired: (_p, c) => `started_at < ${c}` },
  { table: "threads", expired: (_p, c) => `last_updated < ${c}` },
  { table: "call_orphan_parts", expired: (_p, c) => `received_at < ${c}` },
  { table: "calls", expired: (_p, c) => `started_at < ${c}` },
  { table: "call_index", expired: (_p, c) => `started_at < ${c}`, after: ["feedback", "call_deletions"] },
];

/** A project and the first `started_at` it keeps (µs). */
export interface ExpiredProject {
  readonly projectId: string;
  readonly cutoff: number;
}

/** Projects per mutation: the ALTER's text stays far below ClickHouse's max_query_size. */
const PROJECTS_PER_MUTATION = 200;

/** The monthly partitions of `calls` (its PARTITION BY, calls/schema.ts). */
const CALLS_MONTH = /^(\d{4})(\d{2})$/;

/** The first µs after a `YYYYMM` month. */
const monthEnd = (partition: string): number | null => {
  const m = CALLS_MONTH.exec(partition);
  return m ? Date.UTC(Number(m[1]), Number(m[2]), 1) * 1000 : null;
};

export class RetentionExpiry {
  constructor(private readonly store: ClickHouseStore) {}

  /**
   * The table an ALTER runs on: on a cluster, the local tables on every node, named with their
   * database (distributed DDL runs in each node's `default` database).
   */
  private alterTarget(table: string): string {
    return this.store.alterCluster === null ? table : `${this.mutationRef(table)} ON CLUSTER ${this.store.alterCluster}`;
  }

  /** A table read inside a mutation: on a cluster the mutation runs on each node, over its local tables. */
  private readonly mutationRef = (table: string): string => (this.store.cluster === null ? table : `${this.store.database}.${localTableName(table)}`);

  /** Projects with calls, and the oldest `started_at` each ever stored (a candidate test: deletes do not move it). */
  async projects(): Promise<{ projectId: string; oldest: number }[]> {
    const rows = await this.store.rows<{ project_id: string; oldest: string }>("retention_projects", {
      sql: "SELECT project_id, minMerge(min_started_at) AS oldest FROM project_call_bounds GROUP BY project_id",
      params: {},
    });
    return rows.map((r) => ({ projectId: r.project_id, oldest: Number(r.oldest) }));
  }

  /** Tables with a mutation not done yet: no other is queued behind it. */
  async busyTables(): Promise<Set<string>> {
    const rows = await this.store.rows<{ table: string }>("retention_busy_tables", {
      sql: "SELECT DISTINCT table FROM system.mutations WHERE database = currentDatabase() AND is_done = 0",
      params: {},
    });
    return new Set(rows.map((r) => (this.store.cluster !== null && r.table.endsWith("_local") ? r.table.slice(0, -"_local".length) : r.table)));
  }

  /**
   * Starts the deletion of the rows before each project's cutoff, one mutation per table
   * (for up to PROJECTS_PER_MUTATION projects) that holds any and is not busy; answers the
   * tables it started mutations on.
   */
  async deleteExpired(projects: readonly ExpiredProject[], busy: ReadonlySet<string>): Promise<string[]> {
    const expiredIn = new Map<string, Set<string>>(EXPIRING_TABLES.map((t) => [t.table, new Set<string>()]));
    for (const { projectId, cutoff } of projects) {
      for (const t of EXPIRING_TABLES) if (await this.holdsExpired(t, projectId, cutoff)) expiredIn.get(t.table)!.add(projectId);
    }
    const started: string[] = [];
    for (const t of EXPIRING_TABLES) {
      if (busy.has(t.table)) continue;
      const due = projects.filter((p) => expiredIn.get(t.table)!.has(p.projectId) && !(t.after ?? []).some((before) => expiredIn.get(before)!.has(p.projectId)));
      for (let i = 0; i < due.length; i += PROJECTS_PER_MUTATION) await this.startDelete(t, due.slice(i, i + PROJECTS_PER_MUTATION));
      if (due.length > 0) started.push(t.table);
    }
    return started;
  }

  private async startDelete(t: ExpiringTable, projects: readonly ExpiredProject[]): Promise<void> {
    const pb = new ParamBuilder();
    const each = projects.map(({ projectId, cutoff }) => {
      const project = pb.str(projectId);
      return `(project_id = ${project} AND ${t.expired(project, pb.int(cutoff), this.mutationRef)})`;
    });
    await this.store.command(`retention_delete_${t.table}`, { sql: `ALTER TABLE ${this.alterTarget(t.table)} DELETE WHERE ${each.join(" OR ")}`, params: pb.params });
  }

  private async holdsExpired(t: ExpiringTable, projectId: string, cutoff: number): Promise<boolean> {
    const pb = new ParamBuilder();
    const project = pb.str(projectId);
    // A column, not a constant: 18.16 loses the WHERE's columns of a constant SELECT on a Distributed table (code 8/10).
    const rows = await this.store.rows<{ project_id: string }>(`retention_holds_${t.table}`, {
      sql: `SELECT project_id FROM ${t.table} WHERE project_id = ${project} AND ${t.expired(project, pb.int(cutoff), (table) => table)} LIMIT 1`,
      params: pb.params,
    });
    return rows.length > 0;
  }

  /** Drops the months of `calls` that end at or before `cutoff` (past every project's retention); answers them. */
  async dropMonthsBefore(cutoff: number): Promise<string[]> {
    const pb = new ParamBuilder();
    const parts = partsSource(this.store.cluster);
    const rows = await this.store.rows<{ partition: string }>("retention_call_months", {
      sql: `SELECT DISTINCT partition FROM ${parts.from} WHERE database = ${pb.str(this.store.database)} AND table = ${pb.str(parts.table("calls"))} AND active`,
      params: pb.params,
    });
    const past = rows.map((r) => r.partition).filter((p) => {
      const end = monthEnd(p);
      return end !== null && end <= cutoff;
    });
    // The partition's name is six digits (checked above): no value of a user's reaches this SQL.
    for (const month of past) await this.store.command("retention_drop_month", { sql: `ALTER TABLE ${this.alterTarget("calls")} DROP PARTITION ${month}`, params: {} });
    return past;
  }
}
