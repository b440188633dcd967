import { retryBackoffMs } from "../../backoff.js";
import type { DecodedRecord, LoggedRecord } from "./recentRecords.js";

/** What the lane stores with: the consumer's reading, delivery and reporting. */
export interface ExpressParts<T> {
  readonly maxBatchEvents: number;
  /** The records' messages, from memory or read back from the log (values not of the topic's shape set aside). */
  read(records: readonly LoggedRecord<T>[]): Promise<DecodedRecord<T>[]>;
  /** Stores the messages: true once stored, false when the consumer stopped first. */
  deliver(messages: readonly T[]): Promise<boolean>;
  /** Whether the consumer still runs (a failed read is retried while it does). */
  live(): boolean;
  pause(ms: number): Promise<void>;
  /** The records ending at these positions are stored. */
  storedAhead(ends: readonly number[]): void;
  readFailed(err: unknown): void;
}

interface Offered<T> {
  readonly record: LoggedRecord<T>;
  readonly settle: (stored: boolean) => void;
}

/**
 * Interactive records (small writes) stored ahead of the backlog before them, so that a
 * call written while bulk exports wait is readable within a batch's time, not the backlog's.
 * The consumer offers a record here when it is appended behind more than a bound of unstored
 * bytes; the in-order batches then skip it (`claim`), and commit past it only once it is
 * stored. Storing out of order is what the worker already allows (batches in flight, writers
 * of a cluster: callBatchWriter.ts, callDeletes.ts). Offered records go out together, one
 * batch at a time, without waiting to fill.
 */
export class ExpressLane<T> {
  private queue: Offered<T>[] = [];
  /** By the record's start: whether it was stored ahead, until the in-order batches reach it. */
  private readonly offered = new Map<number, Promise<boolean>>();
  private running = false;

  constructor(private readonly parts: ExpressParts<T>) {}

  offer(record: LoggedRecord<T>): void {
    let settle: (stored: boolean) => void = () => {};
    this.offered.set(record.start, new Promise<boolean>((resolve) => (settle = resolve)));
    this.queue.push({ record, settle });
    if (!this.running) void this.run();
  }

  /**
   * The in-order batches reached the record starting at `start`: undefined when it was not
   * offered, else whether it was stored ahead (false: the consumer stopped first).
   */
  claim(start: number): Promise<boolean> | undefined {
    const stored = this.offered.get(start);
    if (stored) this.offered.delete(start);
    return stored;
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.take();
        const stored = await this.store(batch.map((o) => o.record));
        for (const o of batch) o.settle(stored);
        if (stored) this.parts.storedAhead(batch.map((o) => o.record.end));
        else this.queue.splice(0).forEach((o) => o.settle(false));
      }
    } finally {
      this.running = false;
    }
  }

  private take(): Offered<T>[] {
    let events = 0;
    let count = 0;
    while (count < this.queue.length && (count === 0 || events + this.queue[count]!.record.events <= this.parts.maxBatchEvents)) {
      events += this.queue[count]!.record.events;
      count++;
    }
    return this.queue.splice(0, count);
  }

  private async store(records: readonly LoggedRecord<T>[]): Promise<boolean> {
    for (let failures = 0; ; failures++) {
      try {
        const decoded = await this.parts.read(records);
        return await this.parts.deliver(decoded.flatMap((r) => r.messages));
      } catch (err) {
        this.parts.readFailed(err);
        if (!this.parts.live()) return false;
        await this.parts.pause(retryBackoffMs(failures));
      }
    }
  }
}
