import { Gauge } from "prom-client";
import { QueueFullError, RetryableError } from "../errors.js";
import { StoreUnavailableError } from "../store/clickhouse.js";
import type { TraceEvent } from "./events.js";
import type { BatchHandler, EventConsumer, EventPublisher } from "./queue.js";

interface Waiting {
  readonly events: readonly TraceEvent[];
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const pendingGauge = new Gauge({ name: "inprocess_queue_pending_events", help: "Events waiting for the embedded worker" });

/**
 * The embedded queue: a group commit. Requests that arrive while a batch is being written
 * wait together and go out as the next batch; each publisher is answered only after its
 * events were written. Bounded: beyond `maxPendingEvents` publishing fails at once.
 */
export class InProcessQueue implements EventPublisher, EventConsumer {
  private waiting: Waiting[] = [];
  private pendingEvents = 0;
  private handler: BatchHandler | null = null;
  private inFlight: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly options: { maxPendingEvents: number; maxBatchEvents: number }) {}

  publish(events: readonly TraceEvent[]): Promise<void> {
    if (this.closed) return Promise.reject(new RetryableError("shutting down", 5));
    if (events.length === 0) return Promise.resolve();
    if (this.pendingEvents + events.length > this.options.maxPendingEvents) {
      return Promise.reject(new QueueFullError("ingest buffer full", 1));
    }
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ events, resolve, reject });
      this.pendingEvents += events.length;
      pendingGauge.set(this.pendingEvents);
      this.kick();
    });
  }

  async healthy(): Promise<boolean> {
    return !this.closed;
  }

  async start(handler: BatchHandler): Promise<void> {
    this.handler = handler;
    this.kick();
  }

  /** Stops intake, then waits until everything accepted has been written. */
  async shutdown(): Promise<void> {
    this.closed = true;
    while (this.inFlight || (this.waiting.length > 0 && this.handler)) {
      this.kick();
      await this.inFlight;
    }
  }

  async close(): Promise<void> {
    await this.shutdown();
  }

  private kick(): void {
    if (this.inFlight || !this.handler || this.waiting.length === 0) return;
    const batch = this.takeBatch();
    const count = batch.reduce((n, w) => n + w.events.length, 0);
    this.inFlight = this.run(this.handler, batch).finally(() => {
      this.pendingEvents -= count;
      pendingGauge.set(this.pendingEvents);
      this.inFlight = null;
      this.kick();
    });
  }

  private takeBatch(): Waiting[] {
    const batch: Waiting[] = [];
    let count = 0;
    while (this.waiting.length > 0) {
      const next = this.waiting[0]!;
      if (batch.length > 0 && count + next.events.length > this.options.maxBatchEvents) break;
      batch.push(this.waiting.shift()!);
      count += next.events.length;
    }
    return batch;
  }

  private async run(handler: BatchHandler, batch: Waiting[]): Promise<void> {
    const events = batch.flatMap((w) => w.events);
    try {
      await handler(events);
      for (const w of batch) w.resolve();
    } catch (err) {
      if (err instanceof StoreUnavailableError || batch.length === 1) {
        const failure = err instanceof StoreUnavailableError ? new RetryableError(err.message, 2) : err;
        for (const w of batch) w.reject(failure);
      } else {
        // One request's events broke the shared write: write each request alone so the
        // others still succeed and only the bad one is refused.
        for (const w of batch) await this.run(handler, [w]);
      }
    }
  }
}
