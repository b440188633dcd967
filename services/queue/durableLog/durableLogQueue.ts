import { mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Gauge } from "prom-client";
import type { Logger } from "pino";
import { QueueFullError, RetryableError } from "../../errors.js";
import { PendingBound } from "../pendingBound.js";
import type { BatchHandler, EventConsumer, EventPublisher } from "../queue.js";
import type { Topic } from "../topic.js";
import { appendDeadLetters } from "./deadLetters.js";
import { syncDirectory } from "./files.js";
import { lockDirectory } from "./lock.js";
import { framedSize } from "./records.js";
import { RecentRecords, type LoggedRecord } from "./recentRecords.js";
import { SegmentedLog, type LogRecord } from "./segmentedLog.js";

/**
 * The embedded queue of one topic, kept in a durable log on local disk (SegmentedLog).
 *
 * Publishing: a request's messages are one record (JSON). Requests that arrive while a
 * group is being written wait together and go out as the next group, one write and one
 * fdatasync for all of them (group commit); each publisher is answered once its record is
 * synced. Refused at once with QueueFullError when the log holds `maxLogBytes` not yet
 * handled, or when more than the pending bound waits for the sync.
 *
 * Consuming: records are handed over in order from the committed position, whole, in
 * batches of up to `maxBatchEvents` events; a batch goes out once it is full, once its
 * oldest record has waited `maxWaitMs`, or at once when the records are a backlog read
 * back from disk. The committed position moves past a batch only after the handler stored
 * it, and the segments before it are deleted. A store outage is retried with capped
 * backoff, forever (the log keeps accepting meanwhile, up to its bound); a batch the store
 * refuses is retried record by record and then message by message, and what is still
 * refused goes to `dead-letter.jsonl` beside the log, logged, never silently dropped.
 * After a crash, opening replays what was not committed: the handler must be idempotent.
 *
 * The messages of records just appended are kept in memory for the consumer (at most
 * `maxCachedEvents` events, by default 2 × maxBatchEvents, and `maxCachedBytes` log bytes,
 * by default maxPendingBytes; the oldest dropped first);
 * records beyond that are read back from the log and parsed again.
 */
export interface DurableLogOptions {
  readonly dir: string;
  readonly maxLogBytes: number;
  readonly maxPendingEvents: number;
  readonly maxPendingBytes: number;
  readonly maxBatchEvents: number;
  readonly maxWaitMs: number;
  readonly log: Logger;
  readonly segmentBytes?: number;
  readonly maxCachedEvents?: number;
  readonly maxCachedBytes?: number;
  /** Longest `shutdown` spends handling what is still in the log; the rest is handled at the next start. */
  readonly shutdownDrainMs?: number;
}

const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const READ_BYTES = 4 * 1024 * 1024;
const DEAD_LETTERS = "dead-letter.jsonl";

const backlogGauge = new Gauge({ name: "queue_log_backlog_bytes", help: "Bytes in the embedded log not yet handled by the worker, by topic", labelNames: ["topic"] });

interface Waiting<T> {
  readonly messages: readonly T[];
  readonly payload: Buffer;
  readonly weightBytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class DurableLogQueue<T> implements EventPublisher<T>, EventConsumer<T> {
  private readonly bound: PendingBound;
  private waiting: Waiting<T>[] = [];
  /** Bytes waiting for the sync or being written. */
  private unsyncedBytes = 0;
  private flushing: Promise<void> | null = null;
  /** Everything before it is synced and known to the consumer. */
  private durableEnd: number;
  private readonly recent: RecentRecords<T>;
  /** Where the consumer reads next. */
  private next: number;
  private closed = false;
  /** Shutting down: batches go out at once, and a store failure ends the consumer. */
  private draining = false;
  /** Past the shutdown's drain time: the consumer ends after its batch. */
  private stopped = false;
  private wakeConsumer: () => void = () => {};
  private signalStop: () => void = () => {};
  private readonly stopping = new Promise<void>((resolve) => (this.signalStop = resolve));
  private consuming: Promise<void> | null = null;
  private shuttingDown: Promise<void> | null = null;
  private readonly accepts: (value: unknown) => value is T;

  private constructor(
    private readonly topic: Topic<T>,
    private readonly log: SegmentedLog,
    private readonly release: () => void,
    private readonly options: DurableLogOptions,
  ) {
    this.bound = new PendingBound({ maxPendingEvents: options.maxPendingEvents, maxPendingBytes: options.maxPendingBytes }, topic.name);
    this.durableEnd = log.end;
    this.next = log.committed;
    this.recent = new RecentRecords(options.maxCachedEvents ?? 2 * options.maxBatchEvents, options.maxCachedBytes ?? options.maxPendingBytes);
    this.accepts = topic.accepts ?? ((value: unknown): value is T => topic.schema.safeParse(value).success);
    this.updateGauge();
  }

  /** Opens the log in `options.dir` (taking its lock), cutting a damaged tail; nothing is delivered before `start`. */
  static async open<T>(topic: Topic<T>, options: DurableLogOptions): Promise<DurableLogQueue<T>> {
    const { log, release } = await openLocked(options.dir, options.segmentBytes ?? DEFAULT_SEGMENT_BYTES);
    reportRecovery(options.log, topic.name, log);
    return new DurableLogQueue(topic, log, release, options);
  }

  publish(messages: readonly T[], weightBytes = 0): Promise<void> {
    if (this.closed) return Promise.reject(new RetryableError("shutting down", 5));
    if (this.log.failed) return Promise.reject(new RetryableError(`log unavailable: ${this.log.failed.message}`, 5));
    if (messages.length === 0) return Promise.resolve();
    const payload = Buffer.from(JSON.stringify(messages));
    const backlog = this.backlogBytes + this.unsyncedBytes;
    if (backlog > 0 && backlog + framedSize(payload) > this.options.maxLogBytes) return Promise.reject(new QueueFullError("log full", 2));
    try {
      this.bound.admit(messages.length, weightBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    this.unsyncedBytes += framedSize(payload);
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ messages, payload, weightBytes, resolve, reject });
      this.kick();
    });
  }

  async healthy(): Promise<boolean> {
    return !this.closed && !this.log.failed;
  }

  /**
   * Moves the unhandled records of another log directory (one a process no longer running
   * left, e.g. with PROCESSES lowered) into this log, then deletes that directory. Before
   * `start`. A crash midway leaves the directory, adopted again at the next start (the
   * records copied twice are handled twice: idempotent).
   */
  async adopt(dir: string): Promise<number> {
    if (this.consuming || this.flushing) throw new Error("adopt before start and before publishing");
    const { log: other, release } = await openLocked(dir, this.options.segmentBytes ?? DEFAULT_SEGMENT_BYTES);
    reportRecovery(this.options.log, this.topic.name, other);
    let moved = 0;
    try {
      for (let from = other.committed; from < other.end; ) {
        const { records, next } = await other.read(from, other.end, READ_BYTES);
        if (records.length > 0) await this.log.append(records.map((r) => r.payload));
        moved += records.length;
        from = next;
      }
    } finally {
      await other.close();
      release();
    }
    this.durableEnd = this.log.end;
    await rm(dir, { recursive: true, force: true });
    this.updateGauge();
    return moved;
  }

  async start(handler: BatchHandler<T>): Promise<void> {
    if (this.consuming) throw new Error("already started");
    this.consuming = this.consume(handler).catch((err: unknown) => {
      this.options.log.error({ err: errorText(err), topic: this.topic.name }, "log consumer stopped");
    });
  }

  /**
   * Stops intake, syncs what was accepted, then hands the consumer what is in the log, for
   * at most `shutdownDrainMs`, or until the store fails: what is left stays in the log.
   */
  shutdown(): Promise<void> {
    this.shuttingDown ??= this.stop();
    return this.shuttingDown;
  }

  private async stop(): Promise<void> {
    this.closed = true;
    while (this.flushing) await this.flushing;
    this.draining = true;
    this.signalStop();
    const deadline = setTimeout(() => {
      this.stopped = true;
      this.wakeConsumer();
    }, this.options.shutdownDrainMs ?? 20_000);
    this.wakeConsumer();
    await this.consuming;
    clearTimeout(deadline);
    if (this.next < this.durableEnd) {
      this.options.log.warn({ topic: this.topic.name, bytes: this.durableEnd - this.next }, "records left in the log: they are handled at the next start");
    }
    await this.log.close();
    this.release();
  }

  close(): Promise<void> {
    return this.shutdown();
  }

  private get backlogBytes(): number {
    return this.durableEnd - this.log.committed;
  }

  private updateGauge(): void {
    backlogGauge.set({ topic: this.topic.name }, this.backlogBytes);
  }

  private kick(): void {
    if (this.flushing || this.waiting.length === 0) return;
    const group = this.waiting;
    this.waiting = [];
    this.flushing = this.flush(group).finally(() => {
      this.flushing = null;
      this.kick();
    });
  }

  private async flush(group: Waiting<T>[]): Promise<void> {
    let ends: number[];
    try {
      ends = await this.log.append(group.map((w) => w.payload));
    } catch (err) {
      this.options.log.error({ err: errorText(err), topic: this.topic.name }, "log append failed");
      const failure = new RetryableError(`log append failed: ${errorText(err)}`, 5);
      for (const w of group) this.settle(w, () => w.reject(failure));
      return;
    }
    const now = Date.now();
    group.forEach((w, i) => this.recent.add({ start: ends[i]! - framedSize(w.payload), end: ends[i]!, messages: w.messages, appendedAt: now }));
    this.durableEnd = this.log.end;
    for (const w of group) this.settle(w, w.resolve);
    this.updateGauge();
    this.wakeConsumer();
  }

  private settle(w: Waiting<T>, answer: () => void): void {
    this.unsyncedBytes -= framedSize(w.payload);
    this.bound.release(w.messages.length, w.weightBytes);
    answer();
  }

  /** Records before this are on disk only (not, or no longer, in memory). */
  private get recentStart(): number {
    return this.recent.startOr(this.durableEnd);
  }

  private async consume(handler: BatchHandler<T>): Promise<void> {
    for (let failures = 0; await this.batchReady(); ) {
      let batch: LoggedRecord<T>[];
      try {
        batch = await this.takeBatch();
      } catch (err) {
        // Reading the log failed: start again from the committed position, from disk.
        if (this.draining) throw err;
        this.options.log.error({ err: errorText(err), topic: this.topic.name }, "could not read the log, retrying");
        this.next = this.log.committed;
        this.recent.clear();
        await this.pause(Math.min(200 * 2 ** failures++, 5_000));
        continue;
      }
      failures = 0;
      if (batch.length === 0) continue;
      if (!(await this.deliver(handler, batch))) return;
      await this.commit(batch[batch.length - 1]!.end);
    }
  }

  /** Waits until a batch should go out; false once the consumer is to stop. */
  private async batchReady(): Promise<boolean> {
    for (;;) {
      if (this.stopped) return false;
      if (this.next >= this.durableEnd) {
        if (this.draining) return false;
        await this.sleepUntilWoken(null);
        continue;
      }
      if (this.draining || this.next < this.recentStart || this.recent.events >= this.options.maxBatchEvents) return true;
      const waited = Date.now() - this.recent.first!.appendedAt;
      if (waited >= this.options.maxWaitMs) return true;
      await this.sleepUntilWoken(this.options.maxWaitMs - waited);
    }
  }

  private sleepUntilWoken(ms: number | null): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = ms === null ? null : setTimeout(() => this.wakeConsumer(), ms);
      this.wakeConsumer = () => {
        if (timer) clearTimeout(timer);
        this.wakeConsumer = () => {};
        resolve();
      };
    });
  }

  /** A backoff that shutdown cuts short (new records do not). */
  private async pause(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), this.stopping]);
    clearTimeout(timer);
  }

  /** The next records in order, from memory or read back from disk, up to maxBatchEvents events. */
  private async takeBatch(): Promise<LoggedRecord<T>[]> {
    const batch: LoggedRecord<T>[] = [];
    let events = 0;
    const fits = (entry: LoggedRecord<T>) => batch.length === 0 || events + entry.messages.length <= this.options.maxBatchEvents;
    while (events < this.options.maxBatchEvents) {
      if (this.next < this.recentStart) {
        const { records, next } = await this.log.read(this.next, this.recentStart, READ_BYTES);
        if (records.length === 0) {
          this.next = next;
          continue;
        }
        for (const record of records) {
          const entry = this.decode(record);
          if (!fits(entry)) return batch;
          if (entry.malformed) await this.deadLetter(entry.malformed, new Error("not a message of the topic's shape"));
          batch.push(entry);
          events += entry.messages.length;
          this.next = entry.end;
        }
      } else if (this.recent.first && fits(this.recent.first)) {
        const entry = this.recent.takeFirst();
        batch.push(entry);
        events += entry.messages.length;
        this.next = entry.end;
      } else {
        break;
      }
    }
    return batch;
  }

  /** A record read back from disk: its messages, and the values that are not of the topic's shape. */
  private decode(record: LogRecord): LoggedRecord<T> {
    const text = record.payload.toString("utf8");
    const entry = { start: record.start, end: record.end, appendedAt: 0 };
    let values: unknown;
    try {
      values = JSON.parse(text);
    } catch {
      return { ...entry, messages: [], malformed: [text] };
    }
    const list: unknown[] = Array.isArray(values) ? values : [values];
    const messages = list.filter(this.accepts);
    return messages.length === list.length ? { ...entry, messages } : { ...entry, messages, malformed: list.filter((m) => !this.accepts(m)) };
  }

  /** Hands a batch to the handler until it is stored; false when stopping with it not stored. */
  private async deliver(handler: BatchHandler<T>, batch: readonly LoggedRecord<T>[]): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.handle(handler, batch);
        return true;
      } catch (err) {
        if (this.draining || this.stopped) return false;
        this.options.log.warn({ err: errorText(err), attempt, topic: this.topic.name }, "store unavailable, retrying batch");
        await this.pause(Math.min(200 * 2 ** attempt, 5_000));
      }
    }
  }

  /**
   * Stores the batch; a refusal that is not an outage is narrowed down, record by record,
   * then message by message, and the messages refused alone go to the dead letters.
   */
  private async handle(handler: BatchHandler<T>, batch: readonly LoggedRecord<T>[]): Promise<void> {
    const messages = batch.length === 1 ? batch[0]!.messages : batch.flatMap((e) => e.messages);
    if (messages.length === 0) return;
    try {
      await handler(messages);
    } catch (err) {
      if (err instanceof RetryableError) throw err;
      if (messages.length === 1) return this.deadLetter(messages, err);
      const parts = batch.length > 1 ? batch.map((e) => [e]) : messages.map((m) => [{ ...batch[0]!, messages: [m] }]);
      for (const part of parts) await this.handle(handler, part);
    }
  }

  private async deadLetter(messages: readonly unknown[], err: unknown): Promise<void> {
    const path = join(this.options.dir, DEAD_LETTERS);
    await appendDeadLetters(path, messages, errorText(err));
    this.options.log.error({ err: errorText(err), count: messages.length, path, topic: this.topic.name }, "messages refused by the store set aside as dead letters");
  }

  private async commit(position: number): Promise<void> {
    try {
      await this.log.commit(position);
      this.updateGauge();
    } catch (err) {
      // Stored but not committed: handled again after a restart (idempotent); the next commit covers it.
      this.options.log.error({ err: errorText(err), topic: this.topic.name }, "could not commit the log position");
    }
  }
}

/** Longer than a process's drain at shutdown: a replaced process waits for its predecessor's lock. */
const LOCK_WAIT_MS = 30_000;

async function openLocked(dir: string, segmentBytes: number): Promise<{ log: SegmentedLog; release: () => void }> {
  await mkdir(dir, { recursive: true });
  // A new directory's own entry must survive a power loss too (the log's files are synced by the log).
  for (let d = dirname(dir), i = 0; i < 3; d = dirname(d), i++) await syncDirectory(d);
  const release = await lockDirectory(dir, LOCK_WAIT_MS);
  try {
    return { log: await SegmentedLog.open(dir, { segmentBytes }), release };
  } catch (err) {
    release();
    throw err;
  }
}

function reportRecovery(log: Logger, topic: string, opened: SegmentedLog): void {
  const { recovery } = opened;
  for (const cut of recovery.cuts) {
    if (cut.tail) log.warn({ topic, dir: opened.dir, ...cut }, "cut the log's unfinished tail (a crash mid-append): these bytes were never acknowledged");
    else log.error({ topic, dir: opened.dir, ...cut }, "a log segment is damaged (not by a crash): its rest was moved aside and skipped");
  }
  if (recovery.checkpoint === "damaged") log.warn({ topic, dir: opened.dir }, "log checkpoint damaged: replaying the whole log");
  if (recovery.end > recovery.committed) log.info({ topic, dir: opened.dir, bytes: recovery.end - recovery.committed }, "replaying the log's unhandled records");
}
