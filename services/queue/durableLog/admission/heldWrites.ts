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
 * The bulk writes that wait while the worker lags past the bound (LagBound): in order, each
 * for at most the bound's `holdMs`, then refused. Refusing at once would starve the worker: a
 * client told to retry is away for a whole second at least (`Retry-After` counts seconds),
 * longer than the backlog the bound leaves lasts; the held writes are its next batches.
 */
export class HeldWrites<W> {
  private held: Held<W>[] = [];
  private heldBytes = 0;
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
   * Admits held writes, in order, while the worker's lag is within the bound: as many bytes as
   * it just stored, and one write more (the backlog grows by a write per stored batch while
   * within the bound, and shrinks past it), or all of them once it stalled.
   */
  admit(storedBytes = Infinity): void {
    for (let room = storedBytes; this.held.length > 0 && this.lag.refusal() === null; ) {
      const write = this.unhold(this.held[0]!);
      this.outcomes.admit(write);
      room -= this.outcomes.bytesOf(write);
      if (room < 0) break;
    }
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
      this.admit();
      this.watchStall();
    }, Math.max(0, at - Date.now()) + 1);
  }

  private expire(held: Held<W>): void {
    this.admit();
    if (!this.held.includes(held)) return;
    const refusal = this.lag.refusal();
    // The worker stalled meanwhile: the write goes in, behind the held ones before it.
    if (refusal === null) return this.outcomes.admit(this.unhold(held));
    this.outcomes.refuse(this.unhold(held), refusal);
  }

  private unhold(held: Held<W>): W {
    clearTimeout(held.timer);
    this.held = this.held.filter((h) => h !== held);
    this.heldBytes -= this.outcomes.bytesOf(held.write);
    return held.write;
  }
}
