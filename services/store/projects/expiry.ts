import type { ClickHouseStore } from "../clickhouse.js";
import { alterTarget, mutationTableRef, partsSource } from "../clusterSchema.js";
import { ParamBuilder } from "../sql.js";
import { expiredCallIds } from "./retention.js";
import { ExpiredRefs, fileKey, objectKey, tableKey } from "./expiredRefs.js";

/** Where an expiring table's condition is written: one project's placeholders. */
export interface ExpiryScope {
  /** The project (a placeholder). */
  readonly project: string;
  /** The first `started_at` it keeps, µs (a placeholder). */
  readonly cutoff: string;
  /** Names a table read inside the condition (its local table on a cluster). */
  readonly ref: (table: string) => string;
}

/** The scope of a table deleted by target: also some of the project's expired targets. */
export interface TargetScope extends ExpiryScope {
  /**
   * Expired targets (expiredRefs.ts), an array for `has` (no `IN` set: 26.7 hangs on a mutation
   * that tests one set twice).
   */
  readonly targets: string;
}

/**
 * What the retention job deletes of a project's data past its cutoff, table by table:
 * `ALTER TABLE … DELETE` mutations (ClickHouse 18.16 has no TTL), which ClickHouse applies in
 * the background by rewriting the table's parts. A table whose condition reads another
 * table's rows goes before it: the other is deleted from (`after`) only in a run that found
 * none of the first's expired rows left. So no feedback outlives the index rows that find it,
 * no table row or chunk loses the positions or upload that find it, and `call_ref_bounds`,
 * where the expired targets are found, outlives every target deleted through it.
 */
type ExpiringTable = {
  readonly table: string;
  /** Tables that must hold no expired row before this one is deleted from. */
  readonly after?: readonly string[];
} & (
  | {
      readonly byTarget?: false;
      /** Rows of the project past the cutoff. */
      readonly expired: (scope: ExpiryScope) => string;
    }
  | {
      /** Deleted by the project's expired targets (expiredRefs.ts), not by its cutoff alone: a project without any has none of its rows. */
      readonly byTarget: true;
      /** Rows of the project that these targets expire. */
      readonly expired: (scope: TargetScope) => string;
    }
);

const EXPIRED_CALL_IDS = ({ project, cutoff, ref }: ExpiryScope) => expiredCallIds(project, cutoff, ref("call_index"));

/** Targets a call from the cutoff on references (checked again when the mutation runs: a call may have come since). */
const RETAINED_TARGETS = ({ project, cutoff, ref }: TargetScope) => `(SELECT target FROM ${ref("call_ref_bounds")} WHERE project_id = ${project} AND started_at >= ${cutoff})`;

/** Rows whose target key is an expired target no retained call references. */
const expiredTarget = (key: string) => (scope: TargetScope): string => `has(${scope.targets}, ${key}) AND ${key} NOT IN ${RETAINED_TARGETS(scope)}`;

const EXPIRED_TABLE_OF_POSITION = expiredTarget(tableKey("table_digest"));

/**
 * Rows of tables (by row key) that only expired tables hold: a row of an expired table that no
 * other table, nor an expired one a retained call references since, holds. The retained
 * targets' subquery is written once: 26.7 hangs on a mutation that tests one set twice.
 */
const ROWS_OF_EXPIRED_TABLES = (scope: TargetScope): string => {
  const key = tableKey("table_digest");
  const positions = `${scope.ref("table_positions")} WHERE project_id = ${scope.project}`;
  return `row_key IN (SELECT row_key FROM ${positions} AND has(${scope.targets}, ${key}))
    AND row_key NOT IN (SELECT row_key FROM ${positions} AND (NOT has(${scope.targets}, ${key}) OR ${key} IN ${RETAINED_TARGETS(scope)}))`;
};

const TABLE_ROWS = ["table_rows", "table_row_leaves", "table_row_sort_keys"];
const OBJECT_TABLES = ["objects", "object_tags", "object_aliases"];
const REACHED_THROUGH_OBJECTS = ["tables", "table_positions", ...TABLE_ROWS, "files", "file_chunks"];
const TARGET_TABLES = [...OBJECT_TABLES, ...REACHED_THROUGH_OBJECTS];

export const EXPIRING_TABLES: readonly ExpiringTable[] = [
  { table: "feedback", expired: (s) => `call_id IN ${EXPIRED_CALL_IDS(s)}` },
  { table: "call_deletions", expired: (s) => `id IN ${EXPIRED_CALL_IDS(s)}` },
  { table: "otel_log_records", expired: (s) => `time < ${s.cutoff}` },
  { table: "thread_turns", expired: (s) => `started_at < ${s.cutoff}` },
  { table: "threads", expired: (s) => `last_updated < ${s.cutoff}` },
  { table: "call_orphan_parts", expired: (s) => `received_at < ${s.cutoff}` },
  { table: "calls", expired: (s) => `started_at < ${s.cutoff}` },
  { table: "call_index", expired: (s) => `started_at < ${s.cutoff}`, after: ["feedback", "call_deletions"] },
  {
    table: "annotation_progress",
    expired: (s) => `item_id IN (SELECT id FROM ${s.ref("annotation_queue_items")} WHERE project_id = ${s.project} AND call_started_at < ${s.cutoff})`,
  },
  { table: "annotation_queue_items", expired: (s) => `call_started_at < ${s.cutoff}`, after: ["annotation_progress"] },
  { table: "tables", expired: expiredTarget(tableKey()), byTarget: true },
  ...TABLE_ROWS.map((table) => ({ table, expired: ROWS_OF_EXPIRED_TABLES, byTarget: true as const })),
  { table: "table_positions", expired: EXPIRED_TABLE_OF_POSITION, byTarget: true, after: ["tables", ...TABLE_ROWS] },
  {
    table: "file_chunks",
    byTarget: true,
    expired: (s) => `upload_id IN (SELECT upload_id FROM ${s.ref("files")} WHERE project_id = ${s.project} AND ${expiredTarget(fileKey)(s)})`,
  },
  { table: "files", expired: expiredTarget(fileKey), byTarget: true, after: ["file_chunks"] },
  // Last of the targets: the expired targets are found through the objects' values.
  ...OBJECT_TABLES.map((table) => ({ table, expired: expiredTarget(objectKey), byTarget: true as const, after: REACHED_THROUGH_OBJECTS })),
  { table: "call_ref_bounds", expired: (s) => `has(${s.targets}, target) AND started_at < ${s.cutoff}`, byTarget: true, after: TARGET_TABLES },
];

/** A project and the first `started_at` it keeps (µs). */
export interface ExpiredProject {
  readonly projectId: string;
  readonly cutoff: number;
}

/** Projects per mutation: the ALTER's text stays far below ClickHouse's max_query_size. */
const PROJECTS_PER_MUTATION = 200;

/** Targets per mutation (a target key is tens of bytes): with the projects', far below max_query_size. */
const TARGETS_PER_MUTATION = 1000;

/** One project's share of a mutation: its cutoff and, for a table deleted by target, some of its expired targets (else none). */
interface ProjectPart {
  readonly projectId: string;
  readonly cutoff: number;
  readonly targets: readonly string[];
}

/** A project's parts for a table: one, or for a table deleted by target one per TARGETS_PER_MUTATION of its targets (none without targets). */
function partsOf(t: ExpiringTable, projectId: string, cutoff: number, targets: readonly string[]): ProjectPart[] {
  if (!t.byTarget) return [{ projectId, cutoff, targets: [] }];
  const parts: ProjectPart[] = [];
  for (let i = 0; i < targets.length; i += TARGETS_PER_MUTATION) parts.push({ projectId, cutoff, targets: targets.slice(i, i + TARGETS_PER_MUTATION) });
  return parts;
}

/** Parts packed into mutations of at most PROJECTS_PER_MUTATION parts and TARGETS_PER_MUTATION targets. */
function* packed(parts: readonly ProjectPart[]): Generator<ProjectPart[]> {
  let batch: ProjectPart[] = [];
  let targets = 0;
  for (const part of parts) {
    const size = part.targets.length;
    if (batch.length > 0 && (batch.length >= PROJECTS_PER_MUTATION || targets + size > TARGETS_PER_MUTATION)) {
      yield batch;
      batch = [];
      targets = 0;
    }
    batch.push(part);
    targets += size;
  }
  if (batch.length > 0) yield batch;
}

/** The table's condition on one project's part, its values placed in `pb`. */
function expiredRows(t: ExpiringTable, part: ProjectPart, project: string, pb: ParamBuilder, ref: (table: string) => string): string {
  const scope = { project, cutoff: pb.int(part.cutoff), ref };
  return t.byTarget ? t.expired({ ...scope, targets: pb.strings(part.targets) }) : t.expired(scope);
}

/** The monthly partitions of `calls` (its PARTITION BY, store/calls/schema.ts). */
const CALLS_MONTH = /^(\d{4})(\d{2})$/;

/** The first µs after a `YYYYMM` month. */
const monthEnd = (partition: string): number | null => {
  const m = CALLS_MONTH.exec(partition);
  return m ? Date.UTC(Number(m[1]), Number(m[2]), 1) * 1000 : null;
};

export class RetentionExpiry {
  private readonly refs: ExpiredRefs;

  constructor(private readonly store: ClickHouseStore) {
    this.refs = new ExpiredRefs(store);
  }

  private readonly alterTarget = (table: string): string => alterTarget(this.store, table);
  private readonly mutationRef = (table: string): string => mutationTableRef(this.store, table);

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
   * Starts the deletion of the rows before each project's cutoff, and of its expired targets
   * (expiredRefs.ts), one mutation per table (for up to PROJECTS_PER_MUTATION projects and
   * TARGETS_PER_MUTATION targets) that holds any and is not busy; answers the tables it
   * started mutations on, and whether a table holding expired rows waits for another (`after`).
   */
  async deleteExpired(projects: readonly ExpiredProject[], busy: ReadonlySet<string>): Promise<{ started: string[]; waiting: boolean }> {
    const holding = new Map<string, ProjectPart[]>(EXPIRING_TABLES.map((t) => [t.table, []]));
    for (const { projectId, cutoff } of projects) {
      const targets = await this.refs.of(projectId, cutoff);
      for (const t of EXPIRING_TABLES) {
        for (const part of partsOf(t, projectId, cutoff, targets)) {
          if (!(await this.holdsExpired(t, part))) continue;
          holding.get(t.table)!.push(part);
        }
      }
    }
    const expiredIn = new Map([...holding].map(([table, parts]) => [table, new Set(parts.map((p) => p.projectId))]));
    const started: string[] = [];
    let waiting = false;
    for (const t of EXPIRING_TABLES) {
      const held = holding.get(t.table)!;
      const due = held.filter((p) => !(t.after ?? []).some((before) => expiredIn.get(before)!.has(p.projectId)));
      if (due.length < held.length) waiting = true;
      if (busy.has(t.table)) continue;
      for (const mutation of packed(due)) await this.startDelete(t, mutation);
      if (due.length > 0) started.push(t.table);
    }
    return { started, waiting };
  }

  private async startDelete(t: ExpiringTable, parts: readonly ProjectPart[]): Promise<void> {
    const pb = new ParamBuilder();
    const each = parts.map((part) => {
      const project = pb.str(part.projectId);
      return `(project_id = ${project} AND ${expiredRows(t, part, project, pb, this.mutationRef)})`;
    });
    await this.store.command(`retention_delete_${t.table}`, { sql: `ALTER TABLE ${this.alterTarget(t.table)} DELETE WHERE ${each.join(" OR ")}`, params: pb.params });
  }

  private async holdsExpired(t: ExpiringTable, part: ProjectPart): Promise<boolean> {
    const pb = new ParamBuilder();
    const project = pb.str(part.projectId);
    const expired = expiredRows(t, part, project, pb, (table) => table);
    // A column, not a constant: 18.16 loses the WHERE's columns of a constant SELECT on a Distributed table (code 8/10).
    const rows = await this.store.rows<{ project_id: string }>(`retention_holds_${t.table}`, {
      sql: `SELECT project_id FROM ${t.table} WHERE project_id = ${project} AND ${expired} LIMIT 1`,
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
