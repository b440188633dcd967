import type { ClickHouseStore } from "../clickhouse.js";
import { idChunks } from "../sql.js";
import { TurnRank, turnVersion, type TurnRow } from "./threadRows.js";
import { deletedTurnsQuery, rebuildTurnsQuery, recomputeThreadsQuery } from "./threadsAggregate.js";

/** Storage operations behind the worker's thread aggregates. */
export class ThreadsWriteRepository {
  constructor(private readonly store: ClickHouseStore) {}

  async insertTurns(rows: readonly TurnRow[]): Promise<void> {
    await this.store.insert("threads_insert_turns", "thread_turns", rows);
  }

  /** Deletion rows for the turn calls among `ids`; ids of other calls are ignored. */
  async deletedTurnRows(projectId: string, ids: readonly string[], nowMs: number): Promise<TurnRow[]> {
    const rows: TurnRow[] = [];
    for (const chunk of idChunks(ids)) {
      const found = await this.store.rows<{ deleted_turn_id: string; deleted_thread_id: string; deleted_started_at: string }>(
        "threads_find_deleted_turns",
        deletedTurnsQuery(projectId, chunk),
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
    for (const chunk of idChunks(threadIds)) await this.store.command("threads_recompute", recomputeThreadsQuery(projectId, chunk));
  }

  /** Backfill of a whole project from `calls` (data stored before the threads tables). */
  async rebuild(projectId: string, nowMs: number = Date.now()): Promise<void> {
    await this.store.command("threads_rebuild_turns", rebuildTurnsQuery(projectId, nowMs));
    await this.store.command("threads_rebuild", recomputeThreadsQuery(projectId, null));
  }
}
