import { QueueFullError } from "../errors.js";

export interface LagLimits {
  /** Longest the oldest record not yet stored may have waited before a bulk write is refused (0: no bound). */
  readonly maxLagMs: number;
  /** A write of more items than this (calls, spans, log records) is bulk. */
  readonly bulkItems: number;
  /** A write of more log bytes than this is bulk. */
  readonly bulkBytes: number;
  /** Longest a bulk write waits for the lag to fall within the bound before it is refused (BULK_HOLD_MS when absent). */
  readonly holdMs?: number;
  /** A worker that stores nothing for this long is stalled (STALLED_AFTER_MS when absent). */
  readonly stalledAfterMs?: number;
}

/**
 * Longest a bulk write waits for the worker's lag to fall within the bound before it is
 * refused: half the OpenTelemetry exporters' default export timeout (10 s), which leaves
 * them time for a retry.
 */
export const BULK_HOLD_MS = 5_000;

/** Whether a write is bulk for the lag bound: more items or bytes than the limits say (both queue modes). */
export const isBulkWrite = (limits: LagLimits, write: LogWrite): boolean => write.items > limits.bulkItems || write.bytes > limits.bulkBytes;

/** A write to the log: its items (Topic.items) and its record's log bytes. */
export interface LogWrite {
  readonly items: number;
  readonly bytes: number;
}

/**
 * A worker that had records to store and stored none for this long is stalled (ClickHouse
 * down or hung): its lag is then no reason to refuse, and the log acknowledges up to its
 * byte bound, as it always did (durability during an outage).
 */
const STALLED_AFTER_MS = 10_000;
/** Groups appended within this long share one mark: the age read is at most this much too old. */
const MARK_GRAIN_MS = 50;
/**
 * The `Retry-After` of a refused bulk write: the shortest there is. The write waited the hold
 * already, and the backlog that made the worker lag lasts longer than the bound; a client told
 * to wait for the lag to clear comes back after the worker drained it and idles (the OTLP bench,
 * `npx tsx bench/run.ts otlp`, showed the whole machine idle after one slow batch). A client
 * back in a second is held again.
 */
const RETRY_AFTER_SECONDS = 1;

/** Where the records appended from `at` on (within MARK_GRAIN_MS) end. */
interface AppendMark {
  readonly at: number;
  end: number;
}

/**
 * The lag bound of a durable log: while its worker stores (it stored a batch within
 * STALLED_AFTER_MS of having records) but the oldest record it has not stored yet waited
 * longer than `maxLagMs`, a bulk write waits and is then refused (QueueFullError: 429 with
 * Retry-After; durableLog/admission/heldWrites.ts holds it) and a small one is admitted. Bulk writers (OTLP
 * exporters, SDK batches) retry; a small write behind a backlog is stored ahead of it
 * (durableLog/admission/expressLane.ts), so the bound keeps bulk writes, not small ones, within reach of storage.
 *
 * The lag is the age of the oldest unstored record: observed, not predicted. A prediction
 * (unstored bytes ÷ the worker's rate) feeds on itself: the rate measured while the bound
 * keeps the backlog short is that of a worker with one small batch at a time, lower than
 * what it does with its batches in flight full, so the bound would shrink the backlog
 * further and starve the worker. The age lets the backlog be as long as the worker stores
 * within the bound. Its cost: at the start of a burst, writes are admitted until the oldest
 * waited the bound, so the first interactive writes behind them wait up to the bound times
 * the ratio of the burst's rate to the worker's.
 */
export class LagBound {
  /** Append marks of the unstored records, oldest first from `first`. */
  private marks: AppendMark[] = [];
  private first = 0;
  private stored = 0;
  /** Since when the worker has had records to store without storing any (null: nothing to store). */
  private busySince: number | null;

  constructor(
    private readonly limits: LagLimits,
    committed: number,
    end: number,
    now = Date.now(),
  ) {
    this.stored = committed;
    // Records left from an earlier run count as appended now.
    this.busySince = end > committed ? now : null;
    if (end > committed) this.marks.push({ at: now, end });
  }

  /** Records up to `end` were synced and handed to the worker. */
  appended(end: number, now = Date.now()): void {
    this.busySince ??= now;
    const last = this.marks[this.marks.length - 1];
    if (last && now - last.at < MARK_GRAIN_MS) last.end = end;
    else this.marks.push({ at: now, end });
  }

  /** The worker stored everything before `position`. */
  storedUpTo(position: number, now = Date.now()): void {
    this.stored = Math.max(this.stored, position);
    while (this.first < this.marks.length && this.marks[this.first]!.end <= this.stored) this.first++;
    if (this.first === this.marks.length) {
      this.marks = [];
      this.first = 0;
    } else if (this.first > 1024 && this.first * 2 > this.marks.length) {
      this.marks = this.marks.slice(this.first);
      this.first = 0;
    }
    this.busySince = this.first < this.marks.length ? now : null;
  }

  get holdMs(): number {
    return this.limits.holdMs ?? BULK_HOLD_MS;
  }

  /** Bulk by its size, bound or no bound (held only while the worker lags past a bound); the others are interactive (the consumer may store them ahead of a backlog). */
  isBulk(write: LogWrite): boolean {
    return isBulkWrite(this.limits, write);
  }

  /** Null when the oldest unstored record waited no longer than the bound (or the worker is stalled), else the refusal a bulk write gets. */
  refusal(now = Date.now()): QueueFullError | null {
    const lag = this.lagMs(now);
    if (this.limits.maxLagMs === 0 || lag <= this.limits.maxLagMs || this.stalled(now)) return null;
    return new QueueFullError(`the worker is ${Math.round(lag)} ms behind (bound ${this.limits.maxLagMs} ms): retry bulk writes later`, RETRY_AFTER_SECONDS);
  }

  /** How long the oldest record not yet stored has waited (0: none). */
  lagMs(now = Date.now()): number {
    const oldest = this.marks[this.first];
    return oldest ? now - oldest.at : 0;
  }

  /** When the worker counts as stalled if it stores nothing before (null: it has nothing to store). */
  stallsAt(): number | null {
    return this.busySince === null ? null : this.busySince + (this.limits.stalledAfterMs ?? STALLED_AFTER_MS);
  }

  private stalled(now: number): boolean {
    const at = this.stallsAt();
    return at !== null && now >= at;
  }
}
