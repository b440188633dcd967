import { Gauge } from "prom-client";
import { QueueFullError } from "../../errors.js";

export interface LagLimits {
  /** Longest the worker may need to store what is logged before a bulk write is refused (0: no bound). */
  readonly maxLagMs: number;
  /** A write of more items than this (calls, spans, log records) is bulk. */
  readonly bulkItems: number;
  /** A write of more log bytes than this is bulk. */
  readonly bulkBytes: number;
}

/** A write to the log: its items (Topic.items) and its record's log bytes. */
export interface LogWrite {
  readonly items: number;
  readonly bytes: number;
}

/**
 * A worker that had records to store and stored none for this long is stalled (ClickHouse
 * down or hung): it says nothing of how fast it drains, and the log then acknowledges up to
 * its byte bound, as it always did (durability during an outage).
 */
const STALLED_AFTER_MS = 10_000;
/** The store rate is measured over the batches stored in the last this long (before the latest one). */
const RATE_WINDOW_MS = 5_000;
const MAX_SAMPLES = 256;
/** Batches smaller than this take the per-insert overhead and the batch wait, not the time to drain a backlog: they are no measure of the rate. */
const RATE_SAMPLE_MIN_BYTES = 256 * 1024;
const MAX_RETRY_AFTER_SECONDS = 30;

const drainGauge = new Gauge({ name: "queue_log_drain_seconds", help: "Time the log's worker needs to store what is logged, at its measured rate (0 when unknown), by topic", labelNames: ["topic"] });

interface StoreSample {
  readonly at: number;
  readonly bytes: number;
  readonly busyMs: number;
}

/**
 * The lag bound of a durable log: while its worker stores (a batch stored within
 * STALLED_AFTER_MS) but needs longer than `maxLagMs` to store what is logged and not yet
 * stored, a bulk write waits and is then refused (QueueFullError: 429 with Retry-After;
 * DurableLogQueue holds it) and a small one is admitted, so that a small write is stored
 * within about the bound however much bulk is offered. Bulk writers (OTLP exporters, SDK
 * batches) retry; an interactive call is answered.
 *
 * The lag is predicted, not observed: the unstored bytes divided by the worker's store rate,
 * which is what a write appended now waits for (the log is handed over in order). The age
 * of the oldest unstored record would be measured instead, but it lags behind: while writes
 * arrive faster than they are stored, the backlog behind that record holds several times
 * its age of work. The rate is the bytes of batches stored per millisecond the worker had
 * records (idle time does not count), only from batches of at least RATE_SAMPLE_MIN_BYTES:
 * on a quiet service the rate of small batches is the rate writes arrive at, far below what
 * the worker can do, and would refuse a burst that it stores at once.
 * Until a rate is known, nothing is refused for lag.
 */
export class LagBound {
  private samples: StoreSample[] = [];
  /** Since when the worker has had records to store without storing any (null: nothing to store). */
  private busySince: number | null;

  constructor(
    private readonly limits: LagLimits,
    private readonly topic: string,
    backlogAtOpen: number,
    now = Date.now(),
  ) {
    this.busySince = backlogAtOpen > 0 ? now : null;
  }

  /** Records were synced and handed to the worker. */
  appended(now = Date.now()): void {
    this.busySince ??= now;
  }

  /** The worker stored `bytes` more; `backlog` bytes are left to store. */
  stored(bytes: number, backlog: number, now = Date.now()): void {
    if (this.busySince !== null) {
      const busyMs = now - this.busySince;
      if (bytes >= RATE_SAMPLE_MIN_BYTES && busyMs < STALLED_AFTER_MS) this.addSample({ at: now, bytes, busyMs: Math.max(1, busyMs) });
    }
    this.busySince = backlog > 0 ? now : null;
    drainGauge.set({ topic: this.topic }, (this.drainMs(backlog, now) ?? 0) / 1000);
  }

  /** Null when the worker can store the `backlog` bytes within the bound (or is stalled, or its rate unknown), else the refusal a bulk write gets. */
  refusal(backlog: number, now = Date.now()): QueueFullError | null {
    if (this.limits.maxLagMs === 0) return null;
    const drainMs = this.drainMs(backlog, now);
    if (drainMs === null || drainMs <= this.limits.maxLagMs) return null;
    const retryAfter = Math.min(MAX_RETRY_AFTER_SECONDS, Math.max(1, Math.ceil((drainMs - this.limits.maxLagMs) / 1000)));
    return new QueueFullError(`the worker is ${Math.round(drainMs)} ms behind (bound ${this.limits.maxLagMs} ms): bulk writes wait, retry later`, retryAfter);
  }

  isBulk(write: LogWrite): boolean {
    return this.limits.maxLagMs > 0 && (write.items > this.limits.bulkItems || write.bytes > this.limits.bulkBytes);
  }

  /** Milliseconds to store `backlog` bytes at the measured rate; null when the rate is unknown or the worker is stalled. */
  drainMs(backlog: number, now = Date.now()): number | null {
    if (backlog === 0) return 0;
    if (this.busySince !== null && now - this.busySince >= STALLED_AFTER_MS) return null;
    const rate = this.bytesPerMs();
    return rate === null ? null : backlog / rate;
  }

  private bytesPerMs(): number | null {
    if (this.samples.length === 0) return null;
    let bytes = 0;
    let busyMs = 0;
    for (const s of this.samples) {
      bytes += s.bytes;
      busyMs += s.busyMs;
    }
    return bytes / busyMs;
  }

  private addSample(sample: StoreSample): void {
    this.samples.push(sample);
    const from = sample.at - RATE_WINDOW_MS;
    let first = 0;
    while (first < this.samples.length - 1 && (this.samples[first]!.at < from || this.samples.length - first > MAX_SAMPLES)) first++;
    if (first > 0) this.samples = this.samples.slice(first);
  }
}
