import { RetryableError } from "../errors.js";
import { PendingBound } from "./pendingBound.js";
import type { BatchHandler, EventConsumer, EventPublisher } from "./queue.js";
import type { Topic } from "./topic.js";

interface Waiting<T> {
  readonly messages: readonly T[];
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/**
 * One ordered lane of the embedded queue: a group commit. Requests that arrive while a
 * batch is being written wait together and go out as the next batch.
 */
class GroupCommitLane<T> {
  private waiting: Waiting<T>[] = [];
  private inFlight: Promise<void> | null = null;
  private handler: BatchHandler<T> | null = null;

  constructor(private readonly maxBatchEvents: number) {}

  push(entry: Waiting<T>): void {
    this.waiting.push(entry);
    this.kick();
  }

  start(handler: BatchHandler<T>): void {
    this.handler = handler;
    this.kick();
  }

  async drain(): Promise<void> {
    while (this.inFlight || (this.waiting.length > 0 && this.handler)) {
      this.kick();
      await this.inFlight;
    }
  }

  private kick(): void {
    if (this.inFlight || !this.handler || this.waiting.length === 0) return;
    const batch = this.takeBatch();
    this.inFlight = this.run(this.handler, batch).finally(() => {
      this.inFlight = null;
      this.kick();
    });
  }

  private takeBatch(): Waiting<T>[] {
    const batch: Waiting<T>[] = [];
    let count = 0;
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      if (batch.length > 0 && count + next.messages.length > this.maxBatchEvents) break;
      batch.push(this.waiting.shift()!);
      count += next.messages.length;
    }
    return batch;
  }

  private async run(handler: BatchHandler<T>, batch: Waiting<T>[]): Promise<void> {
    try {
      await handler(batch.flatMap((w) => w.messages));
      for (const w of batch) w.resolve();
    } catch (err) {
      if (err instanceof RetryableError || batch.length === 1) {
        for (const w of batch) w.reject(err);
      } else {
        // One request's messages broke the shared write: write each request alone so the
        // others still succeed and only the bad one is refused.
        for (const w of batch) await this.run(handler, [w]);
      }
    }
  }
}

function laneOf(key: string, lanes: number): number {
  let h = 0;
  for (let i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) | 0;
  return Math.abs(h) % lanes;
}

/**
 * The embedded queue of one topic. Messages are spread over a few lanes by the topic's key
 * (like Kafka partitions: the parts of one call stay in order in one lane), so one lane's
 * batch is prepared while another's insert runs. A publisher is answered only after the
 * consumer handled all of its messages. Bounded (PendingBound): beyond it publishing fails
 * at once. Messages are not checked against the topic's schema: they never left the process.
 */
export class InProcessQueue<T> implements EventPublisher<T>, EventConsumer<T> {
  private readonly lanes: GroupCommitLane<T>[];
  private readonly bound: PendingBound;
  private closed = false;

  /** `maxPendingBytes` unset: bounded by the event count alone. */
  constructor(
    private readonly topic: Topic<T>,
    options: { maxPendingEvents: number; maxPendingBytes?: number; maxBatchEvents: number; lanes?: number },
  ) {
    this.bound = new PendingBound({ maxPendingEvents: options.maxPendingEvents, maxPendingBytes: options.maxPendingBytes ?? Infinity }, topic.name);
    this.lanes = Array.from({ length: Math.max(1, options.lanes ?? 1) }, () => new GroupCommitLane<T>(options.maxBatchEvents));
  }

  publish(messages: readonly T[], weightBytes = 0): Promise<void> {
    if (this.closed) return Promise.reject(new RetryableError("shutting down", 5));
    if (messages.length === 0) return Promise.resolve();
    try {
      this.bound.admit(messages.length, weightBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    const perLane = new Map<number, T[]>();
    for (const message of messages) {
      const lane = laneOf(this.topic.key(message), this.lanes.length);
      const list = perLane.get(lane);
      if (list) list.push(message);
      else perLane.set(lane, [message]);
    }
    return Promise.all(
      [...perLane].map(([lane, laneMessages]) => new Promise<void>((resolve, reject) => this.lanes[lane]!.push({ messages: laneMessages, resolve, reject }))),
    ).then(
      () => this.bound.release(messages.length, weightBytes),
      (err: unknown) => {
        this.bound.release(messages.length, weightBytes);
        throw err;
      },
    );
  }

  async healthy(): Promise<boolean> {
    return !this.closed;
  }

  async start(handler: BatchHandler<T>): Promise<void> {
    for (const lane of this.lanes) lane.start(handler);
  }

  /** Stops intake, then waits until everything accepted has been written. */
  async shutdown(): Promise<void> {
    this.closed = true;
    await Promise.all(this.lanes.map((lane) => lane.drain()));
  }

  async close(): Promise<void> {
    await this.shutdown();
  }
}
