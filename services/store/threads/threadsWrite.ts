import type { ClickHouseStore } from "../clickhouse.js";
import { TurnRank, turnVersion, type TurnRow } from "./threadRows.js";
import { deletedTurnsQuery, rebuildTurnsQuery, recomputeThreadsQuery } from "./threadsAggregate.js";

/**
 * Ids named per query (threads to recompute, deleted calls to look up): keeps the rendered
 * SQL well below ClickHouse's max_query_size (256 KiB) even with long ids.
 */
export const IDS_PER_QUERY = 1000;

/** Storage operations behind the worker's thread aggregates. */
export class ThreadsWriteRepository {
  constructor(private readonly store: ClickHouseStore) {}

  async insertTurns(rows: readonly TurnRow[]): Promise<void> {
    await this.store.insert("threads_insert_turns", "thread_turns", rows);
  }

  /** Deletion rows for the turn calls among `ids`; ids of other calls are ignored. */
  async deletedTurnRows(projectId: string, ids: readonly string[], nowMs: number): Promise<TurnRow[]> {
    const rows: TurnRow[] = [];
    for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
      const found = await this.store.rows<{ deleted_turn_id: string; deleted_thread_id: string; deleted_started_at: string }>(
        "threads_find_deleted_turns",
        deletedTurnsQuery(projectId, ids.slice(i, i + IDS_PER_QUERY)),
      );
      for (const t of found) {
        rows.push({
          project_id: projectId,
          thread_id: t.deleted_thread_id,
          turn_id: t.deleted_turn_id,
          started_at: Number(t.deleted_started_at),
          ended_at: 0,
          finished: 0,
          deleted: 1,
          version: turnVersion(TurnRank.deleted, nowMs),
        });
      }
    }
    return rows;
  }

  /** Appends fresh figures for these threads of one project, computed from their turns. */
  async recompute(projectId: string, threadIds: readonly string[]): Promise<void> {
    for (let i = 0; i < threadIds.length; i += IDS_PER_QUERY) {
      await this.store.command("threads_recompute", recomputeThreadsQuery(projectId, threadIds.slice(i, i + IDS_PER_QUERY)));
    }
  }

  /** Backfill of a whole project from `calls` (data stored before the threads tables). */
  async rebuild(projectId: string, nowMs: number = Date.now()): Promise<void> {
    await this.store.command("threads_rebuild_turns", rebuildTurnsQuery(projectId, nowMs));
    await this.store.command("threads_rebuild", recomputeThreadsQuery(projectId, null));
  }
}
