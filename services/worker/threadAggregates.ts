import type { CallSnapshot } from "../store/calls/callRows.js";
import { callKey, type CallKey } from "../store/calls/callsWrite.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { turnRowFromSnapshot, type TurnRow } from "../store/threads/threadRows.js";
import { ThreadsWriteRepository } from "../store/threads/threadsWrite.js";
import type { CallsDerivedWriter } from "./callBatchWriter.js";

/** Threads recomputed in parallel per batch, one query per project and chunk. */
const RECOMPUTE_CONCURRENCY = 4;

/**
 * Keeps the per-thread turn aggregates as turn calls start, end and are deleted. After each
 * batch of calls was written:
 * 1. every turn call's merged snapshot becomes its `thread_turns` row (a replace: redelivery
 *    and repeated snapshots never add a turn; a finished row outranks a running one), and
 *    every deleted turn gets a deleted row, which outranks both;
 * 2. each thread touched by the batch is recomputed exactly from its turn rows
 *    (INSERT ... SELECT inside ClickHouse) and appended as a new version of its figures.
 * Steps are idempotent, so a batch retried after a failure in either step converges.
 */
export class ThreadAggregatesWriter implements CallsDerivedWriter {
  private readonly repo: ThreadsWriteRepository;

  constructor(store: ClickHouseStore, private readonly clock: () => number = Date.now) {
    this.repo = new ThreadsWriteRepository(store);
  }

  async write(calls: readonly CallSnapshot[], deleted: readonly CallKey[]): Promise<void> {
    const now = this.clock();
    const rows: TurnRow[] = [];
    const gone = new Set(deleted.map(callKey));
    for (const call of calls) {
      const row = gone.has(callKey(call)) ? null : turnRowFromSnapshot(call, now);
      if (row) rows.push(row);
    }
    for (const [projectId, ids] of idsByProject(deleted)) rows.push(...(await this.repo.deletedTurnRows(projectId, ids, now)));
    if (rows.length === 0) return;
    await this.repo.insertTurns(rows);

    const jobs = [...touchedThreads(rows)].map(([projectId, threads]) => () => this.repo.recompute(projectId, [...threads]));
    for (let i = 0; i < jobs.length; i += RECOMPUTE_CONCURRENCY) {
      await Promise.all(jobs.slice(i, i + RECOMPUTE_CONCURRENCY).map((job) => job()));
    }
  }
}

function idsByProject(keys: readonly CallKey[]): Map<string, string[]> {
  const out = new Map<string, Set<string>>();
  for (const k of keys) {
    const ids = out.get(k.project_id) ?? new Set<string>();
    ids.add(k.id);
    out.set(k.project_id, ids);
  }
  return new Map([...out].map(([p, ids]) => [p, [...ids]]));
}

function touchedThreads(rows: readonly TurnRow[]): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const r of rows) {
    const threads = out.get(r.project_id) ?? new Set<string>();
    threads.add(r.thread_id);
    out.set(r.project_id, threads);
  }
  return out;
}
