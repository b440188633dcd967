import { mkdir, rm } from "node:fs/promises";
import { dirname } from "node:path";
import { Gauge } from "prom-client";
import type { Logger } from "pino";
import { QueueFullError, RetryableError, errorText } from "../../errors.js";
import { PendingBound } from "../pendingBound.js";
import type { Deliver, EventConsumer, EventPublisher, ReadYourWrites, Topic } from "../queue.js";
import { syncDirectory } from "./storage/files.js";
import { HeldWrites } from "./admission/heldWrites.js";
import { LagBound, type LagLimits } from "../lagBound.js";
import { lockDirectory } from "./storage/lock.js";
import { LogConsumer } from "./consume/logConsumer.js";
import { LogThread } from "./consume/logThread.js";
import { recordCodecOf, type RecordCodec } from "./storage/recordCodec.js";
import { framedSize } from "./storage/records.js";
import type { LoggedRecord } from "./admission/recentRecords.js";
import { SegmentedLog } from "./storage/segmentedLog.js";
import { StoredWaits } from "./admission/storedWaits.js";

/**
 * The embedded queue of one topic, kept in a durable log on local disk (SegmentedLog).
 *
 * Publishing: a request's messages are one record (JSON). Requests that arrive while a
 * group is being written wait together and go out as the next group, one write and one
 * fdatasync for all of them (group commit); each publisher is answered once its record is
 * synced. Refused at once with QueueFullError when the log holds `maxLogBytes` not yet
 * handled, or when more than the pending bound waits for the sync. With `lag` (lagBound.ts),
 * a bulk request that arrives while the worker, storing, has left a record unstored for
 * longer than the bound waits (admission/heldWrites.ts) until it no longer has or its turn comes
 * in a share of what the worker stores, and is refused with QueueFullError after a while
 * (BULK_HOLD_MS).
 *
 * Consuming (LogConsumer): records are handed over in order from the committed position,
 * whole, in batches (size or time bound); the committed position moves past a batch only
 * after the handler stored it, and the segments before it are deleted. Either in this
 * thread (`start`: the messages of records just appended are kept in memory for it, at most
 * `maxCachedEvents` events, by default 2 × maxBatchEvents, and `maxCachedBytes` log bytes,
 * by default maxPendingBytes; records beyond that are read back from the log and parsed
 * again), or elsewhere (`follow`: a consumer in another thread, told where each synced
 * group ends, reads the records from the log files and tells back what it stored, which
 * this side commits). After a crash, opening replays what was not committed: the handler
 * must be idempotent.
 */
export interface DurableLogOptions {
  readonly dir: string;
  readonly maxLogBytes: number;
  /** The lag bound (lagBound.ts); none when absent. */
  readonly lag?: LagLimits;
  readonly maxPendingEvents: number;
  readonly maxPendingBytes: number;
  readonly maxBatchEvents: number;
  /** Log bytes per batch at most. */
  readonly maxBatchBytes: number;
  readonly maxWaitMs: number;
  /** Batches the consumer hands to the handler at once (1 when absent). */
  readonly batchesInFlight?: number;
  readonly log: Logger;
  readonly segmentBytes?: number;
  readonly maxCachedEvents?: number;
  readonly maxCachedBytes?: number;
  /** Longest `shutdown` spends handling what is still in the log; the rest is handled at the next start. */
  readonly shutdownDrainMs?: number;
}

const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
const READ_BYTES = 4 * 1024 * 1024;

const backlogGauge = new Gauge({ name: "queue_log_backlog_bytes", help: "Bytes in the embedded log not yet handled by the worker, by topic", labelNames: ["topic"] });

interface Waiting<T> {
  readonly events: number;
  /** A small write (not bulk by the lag bound's size rule): the consumer may store it ahead of a backlog. */
  readonly interactive: boolean;
  /** The read scopes of its messages (Topic.readScope). */
  readonly scopes: readonly string[];
  /** Kept only for a consumer in this thread (the others read the log): a request's parsed events are garbage once encoded. */
  readonly messages: readonly T[] | null;
  readonly payload: Buffer;
  readonly weightBytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}


/** The consumer of a log: told of each synced group of records, and asked to drain at shutdown. */
export interface LogFollower<T> {
  appended(records: readonly LoggedRecord<T>[], end: number): void;
  /** Hands over the records before `position` without waiting for a fuller batch. */
  hurry(position: number): void;
  /** Hands over what is in the log, for at most `ms`; resolves once it stopped. */
  drain(ms: number): Promise<unknown>;
}

export class DurableLogQueue<T> implements EventPublisher<T>, EventConsumer<T>, ReadYourWrites {
  private readonly bound: PendingBound;
  private readonly lag: LagBound | null;
  private waiting: Waiting<T>[] = [];
  /** Bytes waiting for the sync or being written. */
  private unsyncedBytes = 0;
  private flushing: Promise<void> | null = null;
  /** Everything before it is synced and known to the consumer. */
  private durableEnd: number;
  private closed = false;
  private follower: LogFollower<T> | null = null;
  /** Consumers in another thread get only the records' places. */
  private followerKeepsMessages = true;
  private committing: Promise<void> = Promise.resolve();
  private shuttingDown: Promise<void> | null = null;
  private readonly records: RecordCodec<T>;
  /** Bulk writes waiting for the worker's lag to fall within the bound. */
  private readonly held: HeldWrites<Waiting<T>> | null;
  /**
   * What reads wait for: what the consumer said it stored (the committed position follows
   * once its checkpoint is written; what is stored is readable either way).
   */
  private readonly storedWaits: StoredWaits;

  private constructor(
    private readonly topic: Topic<T>,
    private readonly log: SegmentedLog,
    private readonly release: () => void,
    private readonly options: DurableLogOptions,
  ) {
    this.bound = new PendingBound({ maxPendingEvents: options.maxPendingEvents, maxPendingBytes: options.maxPendingBytes }, topic.name);
    this.durableEnd = log.end;
    this.storedWaits = new StoredWaits(log.committed);
    this.lag = options.lag ? new LagBound(options.lag, log.committed, log.end) : null;
    this.held = this.lag
      ? new HeldWrites<Waiting<T>>(this.lag, {
          admit: (w) => this.enqueue(w),
          refuse: (w, err) => {
            this.bound.release(w.events, w.weightBytes);
            w.reject(err);
          },
          bytesOf: (w) => framedSize(w.payload),
        })
      : null;
    this.records = recordCodecOf(topic);
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
    const payload = this.records.encode(messages);
    const size = framedSize(payload);
    const backlog = this.backlogBytes + this.unsyncedBytes + (this.held?.bytes ?? 0);
    if (backlog > 0 && backlog + size > this.options.maxLogBytes) return Promise.reject(new QueueFullError("log full", 2));
    try {
      this.bound.admit(messages.length, weightBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    const bulk = this.lag?.isBulk({ items: this.itemsOf(messages), bytes: size }) ?? false;
    const interactive = this.lag !== null && !bulk;
    const scopes = this.scopesOf(messages);
    return new Promise<void>((resolve, reject) => {
      const w: Waiting<T> = { events: messages.length, interactive, scopes, messages: this.followerKeepsMessages ? messages : null, payload, weightBytes, resolve, reject };
      if (bulk && this.held!.mustWait()) this.held!.hold(w);
      else this.enqueue(w);
    });
  }

  private enqueue(w: Waiting<T>): void {
    this.unsyncedBytes += framedSize(w.payload);
    this.waiting.push(w);
    this.kick();
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
    if (this.follower || this.flushing) throw new Error("adopt before start and before publishing");
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
    if (moved > 0) this.lag?.appended(this.durableEnd);
    await rm(dir, { recursive: true, force: true });
    this.updateGauge();
    return moved;
  }

  /**
   * Everything synced before the call (of these scopes, or all) is stored: hurries the
   * consumer and waits until it reports it stored (its checkpoint may follow).
   */
  stored(timeoutMs: number, scopes?: readonly string[]): Promise<void> {
    return this.storedWaits.wait(timeoutMs, this.durableEnd, scopes, (position) => this.follower?.hurry(position));
  }

  /** Consumes in the calling thread (`startThread`: in a worker thread of its own). */
  async start(deliver: Deliver<T>): Promise<void> {
    if (this.follower) throw new Error("already started");
    const consumer = new LogConsumer(
      this.topic,
      {
        read: (from, upTo, maxBytes) => this.log.read(from, upTo, maxBytes),
        commit: (position) => this.commitStored(position),
        storedAhead: this.storedAhead,
      },
      { ...this.consumerSettings, dir: this.options.dir, log: this.options.log },
      { committed: this.log.committed, end: this.durableEnd },
    );
    this.follower = consumer;
    consumer.start(deliver);
  }

  /**
   * Consumes in a worker thread (consume/logThread.ts) running `entry`, a module that makes the
   * handler from `data` and calls runLogThread; this thread then only appends and commits.
   * Resolves once the thread has started.
   */
  startThread(entry: URL, data: unknown): Promise<void> {
    if (this.follower) throw new Error("already started");
    const place = () => ({ dir: this.options.dir, committed: this.log.committed, end: this.durableEnd, settings: this.consumerSettings });
    const thread = new LogThread<T>(place, entry, data, { commitStored: (position) => this.commitStored(position), storedAhead: this.storedAhead }, this.options.log);
    this.follower = thread;
    this.followerKeepsMessages = false;
    return thread.run();
  }

  /** The consumer stored these records ahead of the committed position (express): reads may see them. */
  private readonly storedAhead = (ends: readonly number[]): void => this.storedWaits.storedAhead(ends);

  private get consumerSettings() {
    return {
      maxBatchEvents: this.options.maxBatchEvents,
      maxBatchBytes: this.options.maxBatchBytes,
      maxWaitMs: this.options.maxWaitMs,
      batchesInFlight: this.options.batchesInFlight ?? 1,
      maxCachedEvents: this.options.maxCachedEvents ?? 2 * this.options.maxBatchEvents,
      maxCachedBytes: this.options.maxCachedBytes ?? this.options.maxPendingBytes,
      expressBehindBytes: this.options.lag ? this.options.lag.bulkBytes : null,
    };
  }

  /**
   * Everything before `position` is stored: makes it the committed position (one commit at
   * a time, in order; a position not past the committed one is ignored).
   */
  commitStored(position: number): Promise<void> {
    if (position > this.storedWaits.stored) {
      const storedBytes = position - this.storedWaits.stored;
      this.lag?.storedUpTo(position);
      this.storedWaits.storedUpTo(position);
      this.updateGauge();
      this.held?.stored(storedBytes);
    }
    const next = this.committing.then(async () => {
      if (position <= this.log.committed) return;
      await this.log.commit(position);
    });
    this.committing = next.catch((err: unknown) => {
      this.options.log.error({ err: errorText(err), topic: this.topic.name }, "could not commit the log position");
    });
    return next;
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
    this.held?.refuseAll(new RetryableError("shutting down", 5));
    while (this.flushing) await this.flushing;
    await this.follower?.drain(this.options.shutdownDrainMs ?? 20_000);
    await this.committing;
    if (this.log.committed < this.durableEnd) {
      this.options.log.warn({ topic: this.topic.name, bytes: this.durableEnd - this.log.committed }, "records left in the log: they are handled at the next start");
    }
    await this.log.close();
    this.release();
  }

  close(): Promise<void> {
    return this.shutdown();
  }

  private itemsOf(messages: readonly T[]): number {
    const itemsOf = this.topic.items;
    if (!itemsOf) return messages.length;
    let items = 0;
    for (const m of messages) items += itemsOf(m);
    return items;
  }

  private scopesOf(messages: readonly T[]): readonly string[] {
    const scopeOf = this.topic.readScope;
    if (!scopeOf) return [];
    if (messages.length === 1) return [scopeOf(messages[0]!)];
    return [...new Set(messages.map(scopeOf))];
  }

  private get backlogBytes(): number {
    return this.durableEnd - this.log.committed;
  }

  /** The bytes not yet stored (the checkpoint of what is stored may still be on its way to disk). */
  private updateGauge(): void {
    backlogGauge.set({ topic: this.topic.name }, this.durableEnd - this.storedWaits.stored);
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
    this.durableEnd = this.log.end;
    this.lag?.appended(this.durableEnd);
    group.forEach((w, i) => this.storedWaits.appended(ends[i]!, w.scopes, w.interactive));
    for (const w of group) this.settle(w, w.resolve);
    this.updateGauge();
    if (this.follower) {
      const appendedAt = Date.now();
      const records = group.map((w, i): LoggedRecord<T> => ({
        start: ends[i]! - framedSize(w.payload),
        end: ends[i]!,
        events: w.events,
        messages: this.followerKeepsMessages ? w.messages : null,
        appendedAt,
        interactive: w.interactive,
      }));
      this.follower.appended(records, this.durableEnd);
    }
  }

  private settle(w: Waiting<T>, answer: () => void): void {
    this.unsyncedBytes -= framedSize(w.payload);
    this.bound.release(w.events, w.weightBytes);
    answer();
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
