import { monitorScoringBacklog, monitorScoringDropped } from "../../metrics.js";
import type { MonitorSpec } from "./monitorSpec.js";

/** One call to score for one monitor version. */
export interface ScoringItem {
  readonly monitor: MonitorSpec;
  readonly callId: string;
  /** µs: the call's end (the scores' ids derive from it). */
  readonly endedAt: number;
}

const keyOf = (item: ScoringItem) => `${item.monitor.ref}\n${item.callId}`;

/**
 * The bounded queue between the monitors' sweeps and their scoring, in one worker process.
 * `push` never waits: when full, the oldest items are dropped (counted in
 * `monitor_scoring_dropped_total`), so a sweep, and whatever feeds it, never slows for the
 * model. An item already waiting is not queued twice (overlapping sweeps find the same calls).
 * Its length is `monitor_scoring_backlog`.
 */
export class ScoringQueue {
  private readonly items = new Map<string, ScoringItem>();
  private waiter: (() => void) | null = null;

  constructor(readonly capacity: number) {
    if (capacity < 1) throw new Error("the scoring queue needs room for one item");
  }

  get size(): number {
    return this.items.size;
  }

  /** Queues items, oldest first; answers how many waiting items were dropped to make room. */
  push(items: readonly ScoringItem[]): number {
    let dropped = 0;
    for (const item of items) {
      const key = keyOf(item);
      if (this.items.has(key)) continue;
      if (this.items.size >= this.capacity) {
        // A Map iterates in insertion order: its first key is the oldest item.
        this.items.delete(this.items.keys().next().value as string);
        dropped++;
      }
      this.items.set(key, item);
    }
    if (dropped > 0) monitorScoringDropped.inc(dropped);
    monitorScoringBacklog.set(this.items.size);
    this.wake();
    return dropped;
  }

  /** The oldest item, taken out; null when empty. */
  shift(): ScoringItem | null {
    const first = this.items.entries().next();
    if (first.done) return null;
    this.items.delete(first.value[0]);
    monitorScoringBacklog.set(this.items.size);
    return first.value[1];
  }

  /** Resolves when an item is pushed (or `wake` is called), or after `ms`. */
  wait(ms: number): Promise<void> {
    return new Promise((done) => {
      const timer = setTimeout(() => this.wake(), ms);
      this.waiter = () => {
        clearTimeout(timer);
        done();
      };
    });
  }

  wake(): void {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }
}
