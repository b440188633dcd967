import type { WrittenCall } from "../store/calls/callRows.js";
import { callKey, idsByProject, type CallKey } from "../queue/events.js";
import type { ClickHouseStore } from "../store/clickhouse.js";
import { turnRowFromSnapshot, type TurnRow } from "../store/threads/threadRows.js";
import { ThreadsWriteRepository } from "../store/threads/threadsWrite.js";
import type { CallsDerivedWriter } from "./callBatchWriter.js";

/** Threads recomputed in parallel per batch, one query per project and chunk. */
const RECOMPUTE_CONCURRENCY = 4;
/** For this long after ClickHouse was last unavailable, the threads written are recomputed again every SETTLING_RECHECK_MS. */
const SETTLING_MS = 60_000;
const SETTLING_RECHECK_MS = 5_000;
/** Threads held for those later recomputes at most: past it, the oldest wait for their next turn. */
const SETTLING_MAX_THREADS = 100_000;

/**
 * Keeps the per-thread turn aggregates as turn calls start, end and are deleted. After each
 * batch of calls was written:
 * 1. every turn call's merged snapshot becomes its `thread_turns` row (a replace: redelivery
 *    and repeated snapshots never add a turn; a finished row outranks a running one), and
 *    every deleted turn gets a deleted row, which outranks both;
 * 2. each thread touched by the batch is recomputed exactly from its turn rows
 *    (INSERT ... SELECT inside ClickHouse) and appended as a new version of its figures.
 * Steps are idempotent, so a batch retried after a failure in either step converges.
 *
 * A recompute reads the turns from one replica of the project's shard. Right after an outage
 * (a replica, a shard or ZooKeeper down) that replica may still be fetching turns its partner
 * took meanwhile, and the figures it gives would stand until the thread's next turn. So for
 * SETTLING_MS after the store was last unavailable, the threads a batch wrote are recomputed
 * again every SETTLING_RECHECK_MS: a thread's figures carry the sum of its turns' versions, so
 * the recompute that sees every turn outranks one that missed some, whatever their order.
 */
export class ThreadAggregatesWriter implements CallsDerivedWriter {
  private readonly repo: ThreadsWriteRepository;
  /** Threads to recompute again while the store settles after an outage, by project. */
  private settling = new Map<string, Set<string>>();
  private settlingCount = 0;
  private recheck: NodeJS.Timeout | null = null;

  constructor(private readonly store: ClickHouseStore, private readonly clock: () => number = Date.now) {
    this.repo = new ThreadsWriteRepository(store);
  }

  async write(calls: readonly WrittenCall[], deleted: readonly CallKey[]): Promise<void> {
    const now = this.clock();
    const rows: TurnRow[] = [];
    const gone = new Set(deleted.map(callKey));
    for (const call of calls) {
      const row = gone.size > 0 && gone.has(callKey(call)) ? null : turnRowFromSnapshot(call, now);
      if (row) rows.push(row);
    }
    for (const [projectId, ids] of idsByProject(deleted)) rows.push(...(await this.repo.deletedTurnRows(projectId, ids, now)));
    if (rows.length === 0) return;
    await this.repo.insertTurns(rows);

    const touched = touchedThreads(rows);
    await this.recomputeAll(touched);
    if (Date.now() - this.store.lastUnavailableAt < SETTLING_MS) this.settle(touched);
  }

  private async recomputeAll(threads: ReadonlyMap<string, ReadonlySet<string>>): Promise<void> {
    const jobs = [...threads].map(([projectId, ids]) => () => this.repo.recompute(projectId, [...ids]));
    for (let i = 0; i < jobs.length; i += RECOMPUTE_CONCURRENCY) {
      await Promise.all(jobs.slice(i, i + RECOMPUTE_CONCURRENCY).map((job) => job()));
    }
  }

  /** Holds threads for the later recomputes and makes sure one is coming. */
  private settle(threads: ReadonlyMap<string, ReadonlySet<string>>): void {
    for (const [projectId, ids] of threads) {
      const held = this.settling.get(projectId) ?? new Set<string>();
      for (const id of ids) {
        if (this.settlingCount >= SETTLING_MAX_THREADS || held.has(id)) continue;
        held.add(id);
        this.settlingCount++;
      }
      this.settling.set(projectId, held);
    }
    this.recheck ??= setTimeout(() => void this.recomputeSettling(), SETTLING_RECHECK_MS);
    this.recheck.unref();
  }

  /** Recomputes the held threads; once the store has been available for SETTLING_MS, this is their last time. */
  private async recomputeSettling(): Promise<void> {
    const threads = this.settling;
    const settled = Date.now() - this.store.lastUnavailableAt >= SETTLING_MS;
    if (settled) {
      this.settling = new Map();
      this.settlingCount = 0;
    }
    // A failure here is retried at the next round, or by the thread's next turn once settled.
    await this.recomputeAll(threads).catch(() => undefined);
    this.recheck = null;
    if (this.settling.size > 0) this.settle(new Map());
  }
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
