import type { LagBound } from "../../lagBound.js";

interface Held<W> {
  readonly write: W;
  readonly timer: NodeJS.Timeout;
}

/** What becomes of a held write: admitted to the log, or refused with the bound's error. */
export interface HeldOutcomes<W> {
  admit(write: W): void;
  refuse(write: W, err: Error): void;
  /** The log bytes a write takes. */
  bytesOf(write: W): number;
}

/**
 * The share of the bytes the worker stores that held writes are admitted for while it is past
 * the bound: the backlog shrinks at half the worker's rate, so its lag comes back within the
 * bound, and the worker is never left without records while writes wait.
 */
const PAST_BOUND_SHARE = 0.5;

/**
 * The bulk writes that wait while the worker lags past the bound (LagBound): in order, each
 * for at most the bound's `holdMs`, then refused. Refusing at once would starve the worker: a
 * client told to retry is away for a whole second at least (`Retry-After` counts seconds),
 * longer than the backlog the bound leaves lasts; the held writes are its next batches.
 *
 * While the worker stores but is still past the bound, held writes go in for a share of what
 * it stores (PAST_BOUND_SHARE). Holding them all until the lag is back within the bound would
 * hold them for the whole backlog: the lag is the age of the oldest record not stored, and it
 * keeps growing until the records written before the hold are stored. Under a steady overload
 * that outlasted the hold, every held write was refused at once and the worker then ran dry
 * (docs/benchmarks.md, "Held writes admitted while the worker drains").
 */
export class HeldWrites<W> {
  private held: Held<W>[] = [];
  private heldBytes = 0;
  /** The log bytes held writes may take, from the share of what the worker stored past the bound. */
  private credit = 0;
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly lag: LagBound,
    private readonly outcomes: HeldOutcomes<W>,
  ) {}

  /** Log bytes held. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Whether a bulk write must wait: writes are held already (it goes behind them), or the worker lags. */
  mustWait(): boolean {
    return this.held.length > 0 || this.lag.refusal() !== null;
  }

  hold(write: W): void {
    const held: Held<W> = { write, timer: setTimeout(() => this.expire(held), this.lag.holdMs) };
    this.held.push(held);
    this.heldBytes += this.outcomes.bytesOf(write);
    this.watchStall();
  }

  /**
   * The worker stored `bytes`. Within the bound, held writes go in, in order: as many bytes as
   * it stored, and one write more (the backlog grows by a write per stored batch while within
   * the bound). Past it, those that fit in the credit its share of `bytes` adds to.
   */
  stored(bytes: number): void {
    if (this.held.length === 0) {
      this.credit = 0;
      return;
    }
    if (this.lag.refusal() === null) return this.admitUpTo(bytes);
    this.credit += bytes * PAST_BOUND_SHARE;
    for (let next = this.held[0]; next && this.outcomes.bytesOf(next.write) <= this.credit; next = this.held[0]) {
      this.credit -= this.outcomes.bytesOf(next.write);
      this.outcomes.admit(this.unhold(next));
    }
  }

  /** Held writes in order, `room` bytes of them and one write more; the credit past the bound is dropped. */
  private admitUpTo(room: number): void {
    this.credit = 0;
    for (let left = room; this.held.length > 0 && left >= 0; ) {
      const write = this.unhold(this.held[0]!);
      this.outcomes.admit(write);
      left -= this.outcomes.bytesOf(write);
    }
  }

  /** Every held write goes in once the lag is within the bound, or the worker stalled. */
  private admitIfWithinBound(): void {
    if (this.lag.refusal() === null) this.admitUpTo(Infinity);
  }

  /** Refuses every held write with `err` (shutting down). */
  refuseAll(err: Error): void {
    if (this.stallTimer) clearTimeout(this.stallTimer);
    for (const held of [...this.held]) this.outcomes.refuse(this.unhold(held), err);
  }

  /** While writes are held, admits them when the worker stalls (it then stores nothing, and no commit would wake them). */
  private watchStall(): void {
    const at = this.lag.stallsAt();
    if (this.stallTimer || this.held.length === 0 || at === null) return;
    this.stallTimer = setTimeout(() => {
      this.stallTimer = null;
      this.admitIfWithinBound();
      this.watchStall();
    }, Math.max(0, at - Date.now()) + 1);
  }

  private expire(held: Held<W>): void {
    const refusal = this.lag.refusal();
    // The worker caught up or stalled meanwhile: the write goes in, behind the held ones before it.
    if (refusal === null) return this.admitUpTo(Infinity);
    this.outcomes.refuse(this.unhold(held), refusal);
  }

  private unhold(held: Held<W>): W {
    clearTimeout(held.timer);
    this.held = this.held.filter((h) => h !== held);
    this.heldBytes -= this.outcomes.bytesOf(held.write);
    return held.write;
  }
}
