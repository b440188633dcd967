import { join } from "node:path";
import type { Logger } from "pino";
import { retryBackoffMs } from "../../backoff.js";
import type { Deliver, Delivery, Topic } from "../../queue.js";
import { ExpressLane } from "../admission/expressLane.js";
import { appendDeadLetters } from "../storage/files.js";
import { bytesFieldsOf, toJsonValue, type BytesFields } from "../../bytesFields.js";
import { RecentRecords, type DecodedRecord, type LoggedRecord } from "../admission/recentRecords.js";
import { recordCodecOf, type RecordCodec } from "../storage/recordCodec.js";
import type { LogRecord } from "../storage/segmentedLog.js";
import { errorText } from "../../../errors.js";

/** Where a consumer reads the log's records and moves its committed position. */
export interface LogSource {
  read(from: number, upTo: number, maxBytes: number): Promise<{ records: LogRecord[]; next: number }>;
  /** Everything before `position` is stored; called with growing positions, one call at a time. */
  commit(position: number): Promise<void>;
  /** The records ending at these positions were stored ahead of the committed position (express). */
  storedAhead(ends: readonly number[]): void;
}

export interface LogConsumerOptions {
  /** Where `dead-letter.jsonl` is written. */
  readonly dir: string;
  readonly maxBatchEvents: number;
  /** Log bytes a batch holds at most (a single bigger record still goes, alone). */
  readonly maxBatchBytes: number;
  readonly maxWaitMs: number;
  /** Batches handed to the handler at once (1: each is stored before the next is taken). */
  readonly batchesInFlight: number;
  readonly maxCachedEvents: number;
  readonly maxCachedBytes: number;
  /** An interactive record appended behind more log bytes than this not yet stored goes ahead of them (null: never). */
  readonly expressBehindBytes: number | null;
  readonly log: Logger;
}

/** A record of a batch: its messages, or, stored ahead of the batch (express), none and whether that store succeeded. */
type BatchEntry<T> = DecodedRecord<T> & { readonly storedAhead?: Promise<boolean> };

const READ_BYTES = 4 * 1024 * 1024;
const NO_MESSAGES: readonly never[] = [];
const DEAD_LETTERS = "dead-letter.jsonl";

/** Whether every one of these deliveries ended with its batch stored and committed. */
async function settled(deliveries: readonly Promise<boolean>[]): Promise<boolean> {
  const results = await Promise.all(deliveries);
  return results.every(Boolean);
}


/**
 * The consuming side of a durable log (DurableLogQueue), in a thread of its own
 * (logThread.ts) or, for the jobs topic, in the publisher's thread. It is told of every
 * synced group of records (`appended`), with their messages or only their places, and hands
 * the records over in order from the committed position, whole, in batches of up to
 * `maxBatchEvents` events and `maxBatchBytes` log bytes (the worker holds a batch and its
 * rows until they are stored); a batch goes out once it is full, once its oldest record has
 * waited `maxWaitMs`, at once when no batch went out in the last `maxWaitMs` (a lone write to
 * an idle consumer does not wait; under load batches still go out at most every `maxWaitMs`
 * unless full), at once when the records are a backlog (not told of since the start, or
 * dropped from memory), or at once up to a position someone waits for (`hurry`).
 * Records without their messages in memory are read back from the log and parsed.
 *
 * Each batch goes to the worker's delivery (worker/delivery.ts: retries, dead letters); the
 * committed position moves past a batch only once it was delivered, in order. Records that
 * are not messages of the topic's shape go to `dead-letter.jsonl` at once.
 */
export class LogConsumer<T> {
  private durableEnd: number;
  /** Where the consumer reads next. */
  private next: number;
  private committed: number;
  private readonly recent: RecentRecords<T>;
  /** A record read back that did not fit in the last batch: the first of the next one. */
  private carried: DecodedRecord<T> | null = null;
  /** Draining: batches go out at once, and a store failure ends the consumer. */
  private draining = false;
  /** Past the drain's time: the consumer ends after its batch. */
  private stopped = false;
  private wakeConsumer: () => void = () => {};
  private signalStop: () => void = () => {};
  private readonly stopping = new Promise<void>((resolve) => (this.signalStop = resolve));
  private consuming: Promise<void> | null = null;
  private readonly records: RecordCodec<T>;
  /** Interactive records stored ahead of a backlog (queue/durableLog/admission/expressLane.ts); null until started, or when off. */
  private express: ExpressLane<T> | null = null;
  /** Records before this go out at once, without waiting for a fuller batch. */
  private hurriedTo = 0;
  /** When the last batch was taken (at first, when the consumer was made). */
  private lastTakenAt = Date.now();
  /** Bytes fields are base64 in the dead letters' JSON lines. */
  private readonly bytes: BytesFields;
  private readonly delivery: Delivery<T> = {
    live: () => !this.draining && !this.stopped,
    pause: (ms) => this.pause(ms),
    deadLetter: (messages, reason) => this.deadLetter(messages, reason),
  };

  constructor(
    private readonly topic: Topic<T>,
    private readonly source: LogSource,
    private readonly options: LogConsumerOptions,
    positions: { readonly committed: number; readonly end: number },
  ) {
    this.durableEnd = positions.end;
    this.next = positions.committed;
    this.committed = positions.committed;
    this.recent = new RecentRecords(options.maxCachedEvents, options.maxCachedBytes);
    this.records = recordCodecOf(topic);
    this.bytes = bytesFieldsOf(topic.schema);
  }

  /** Records synced up to `end` (those given, in order, are the last of them). */
  appended(records: readonly LoggedRecord<T>[], end: number): void {
    const behind = this.options.expressBehindBytes;
    for (const record of records) {
      this.recent.add(record);
      if (this.express && record.interactive && record.start - this.committed > behind!) this.express.offer(record);
    }
    this.durableEnd = end;
    this.wakeConsumer();
  }

  /** Hands over the records before `position` without waiting for a fuller batch (someone waits for them). */
  hurry(position: number): void {
    this.hurriedTo = Math.max(this.hurriedTo, position);
    this.wakeConsumer();
  }

  start(deliver: Deliver<T>): void {
    if (this.consuming) throw new Error("already started");
    if (this.options.expressBehindBytes !== null) this.express = this.expressLane(deliver);
    this.consuming = this.consume(deliver).catch((err: unknown) => {
      this.options.log.error({ err: errorText(err), topic: this.topic.name }, "log consumer stopped");
    });
  }

  /**
   * Hands over what is in the log up to its synced end, for at most `ms`, or until the
   * store fails; resolves with the committed position then (what is after it stays in the log).
   */
  async drain(ms: number): Promise<number> {
    this.draining = true;
    this.signalStop();
    const deadline = setTimeout(() => {
      this.stopped = true;
      this.wakeConsumer();
    }, ms);
    this.wakeConsumer();
    await this.consuming;
    clearTimeout(deadline);
    return this.committed;
  }

  /** Records before this are on disk only (not, or no longer, known in memory). */
  private get recentStart(): number {
    return this.recent.startOr(this.durableEnd);
  }

  /**
   * Takes batches in order and hands up to `batchesInFlight` of them to the handler at once
   * (one is decoded and merged while the store writes the one before). Positions are
   * committed in order: a batch's end only once every batch before it was stored.
   */
  private async consume(deliver: Deliver<T>): Promise<void> {
    const inFlight: Promise<boolean>[] = [];
    for (let failures = 0; await this.batchReady(); ) {
      let batch: DecodedRecord<T>[];
      try {
        batch = await this.takeBatch();
      } catch (err) {
        // Reading the log failed: start again from the committed position, from disk, once
        // the batches already handed over are through.
        if (!(await settled(inFlight.splice(0)))) return;
        if (this.draining) throw err;
        this.options.log.error({ err: errorText(err), topic: this.topic.name }, "could not read the log, retrying");
        this.next = this.committed;
        this.carried = null;
        this.recent.clear();
        await this.pause(retryBackoffMs(failures++));
        continue;
      }
      failures = 0;
      if (batch.length === 0) continue;
      inFlight.push(this.storeThenCommit(deliver, batch, inFlight[inFlight.length - 1]));
      if (inFlight.length >= this.options.batchesInFlight && !(await inFlight.shift()!)) return;
    }
    await settled(inFlight);
  }

  private expressLane(deliver: Deliver<T>): ExpressLane<T> {
    return new ExpressLane<T>({
      maxBatchEvents: this.options.maxBatchEvents,
      read: (records) => this.readRecords(records),
      deliver: (messages) => deliver(messages, this.delivery),
      live: () => this.delivery.live(),
      pause: (ms) => this.pause(ms),
      storedAhead: (ends) => this.source.storedAhead(ends),
      readFailed: (err) => this.options.log.error({ err: errorText(err), topic: this.topic.name }, "could not read records to store ahead, retrying"),
    });
  }

  /**
   * Stores the batch, then commits its end once the records of it stored ahead are and the
   * batch before it (`previous`) is committed; false when stopping first.
   */
  private async storeThenCommit(deliver: Deliver<T>, batch: readonly BatchEntry<T>[], previous: Promise<boolean> | undefined): Promise<boolean> {
    const messages = batch.length === 1 ? batch[0]!.messages : batch.flatMap((e) => e.messages);
    const stored = await deliver(messages, this.delivery);
    const ahead = batch.flatMap((e) => (e.storedAhead ? [e.storedAhead] : []));
    if (ahead.length > 0 && !(await settled(ahead))) return false;
    if (!(await (previous ?? true)) || !stored) return false;
    await this.commit(batch[batch.length - 1]!.end);
    return true;
  }

  /** Waits until a batch should go out; false once the consumer is to stop. */
  private async batchReady(): Promise<boolean> {
    for (;;) {
      if (this.stopped) return false;
      // A carried record lies before `next`: it goes out even when nothing follows it.
      if (this.carried) return true;
      if (this.next >= this.durableEnd) {
        if (this.draining) return false;
        await this.sleepUntilWoken(null);
        continue;
      }
      if (this.draining || this.next < this.recentStart || this.next < this.hurriedTo || this.recent.events >= this.options.maxBatchEvents || this.recent.bytes >= this.options.maxBatchBytes) return true;
      const waited = Date.now() - Math.min(this.recent.first!.appendedAt, this.lastTakenAt);
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

  /** A backoff that a drain cuts short (new records do not). */
  private async pause(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), this.stopping]);
    clearTimeout(timer);
  }

  /** The next records in order, from memory or read back from disk, up to maxBatchEvents events and maxBatchBytes bytes. */
  private async takeBatch(): Promise<BatchEntry<T>[]> {
    this.lastTakenAt = Date.now();
    const batch: BatchEntry<T>[] = [];
    let events = 0;
    let bytes = 0;
    const { maxBatchEvents, maxBatchBytes } = this.options;
    const fits = (entry: LoggedRecord<T>) =>
      batch.length === 0 || (events + entry.events <= maxBatchEvents && bytes + (entry.end - entry.start) <= maxBatchBytes);
    const take = (entry: DecodedRecord<T>) => {
      batch.push(entry);
      events += entry.events;
      bytes += entry.end - entry.start;
      this.next = entry.end;
    };
    // Stored ahead: the batch only waits for it, and it counts toward neither bound.
    const takeStoredAhead = ({ start, end }: { start: number; end: number }, storedAhead: Promise<boolean>) => {
      batch.push({ start, end, events: 0, appendedAt: 0, messages: NO_MESSAGES, storedAhead });
      this.next = end;
    };
    if (this.carried) {
      take(this.carried);
      this.carried = null;
    }
    while (events < maxBatchEvents && bytes < maxBatchBytes && this.next < this.durableEnd) {
      const first = this.recent.first;
      if (first && first.start <= this.next && first.messages !== null) {
        const storedAhead = this.express?.claim(first.start);
        if (storedAhead) {
          takeStoredAhead(this.recent.takeFirst(), storedAhead);
          continue;
        }
        if (!fits(first)) break;
        take({ ...this.recent.takeFirst(), messages: first.messages });
        continue;
      }
      // Not in memory: read back from disk, up to the records kept in memory (or to the end).
      const upTo = first && first.messages !== null ? first.start : this.durableEnd;
      const { records, next } = await this.source.read(this.next, upTo, READ_BYTES);
      if (records.length === 0) this.next = next;
      for (const record of records) {
        const storedAhead = this.express?.claim(record.start);
        if (storedAhead) {
          takeStoredAhead(record, storedAhead);
          continue;
        }
        const entry = this.decode(record);
        if (entry.malformed) await this.deadLetter(entry.malformed, "not a message of the topic's shape");
        if (!fits(entry)) {
          this.carried = entry;
          this.next = entry.end;
          break;
        }
        take(entry);
      }
      this.recent.dropThrough(this.next);
      if (this.carried) break;
    }
    return batch;
  }

  /** These records' messages, from memory or read back from the log (a run of adjacent records in one read); values not of the topic's shape go to the dead letters. */
  private async readRecords(records: readonly LoggedRecord<T>[]): Promise<DecodedRecord<T>[]> {
    const decoded: DecodedRecord<T>[] = [];
    for (let i = 0; i < records.length; ) {
      const first = records[i]!;
      if (first.messages !== null) {
        decoded.push({ ...first, messages: first.messages });
        i++;
        continue;
      }
      let last = i;
      while (last + 1 < records.length && records[last + 1]!.messages === null && records[last + 1]!.start === records[last]!.end) last++;
      for (let from = first.start, upTo = records[last]!.end; from < upTo; ) {
        const read = await this.source.read(from, upTo, READ_BYTES);
        if (read.next <= from) throw new Error(`no record at ${from} in the log`);
        for (const record of read.records) {
          const entry = this.decode(record);
          if (entry.malformed) await this.deadLetter(entry.malformed, "not a message of the topic's shape");
          decoded.push(entry);
        }
        from = read.next;
      }
      i = last + 1;
    }
    return decoded;
  }

  /** A record read back from disk: its messages, and the values that are not of the topic's shape. */
  private decode(record: LogRecord): DecodedRecord<T> {
    const { messages, malformed } = this.records.decode(record.payload);
    const entry = { start: record.start, end: record.end, appendedAt: 0, events: messages.length, messages };
    return malformed ? { ...entry, malformed } : entry;
  }

  private async deadLetter(messages: readonly unknown[], reason: string): Promise<void> {
    const path = join(this.options.dir, DEAD_LETTERS);
    await appendDeadLetters(path, messages.map((m) => toJsonValue(m, this.bytes)), reason);
    this.options.log.error({ err: reason, count: messages.length, path, topic: this.topic.name }, "messages set aside as dead letters");
  }

  private async commit(position: number): Promise<void> {
    try {
      await this.source.commit(position);
      this.committed = position;
    } catch (err) {
      // Stored but not committed: handled again after a restart (idempotent); the next commit covers it.
      this.options.log.error({ err: errorText(err), topic: this.topic.name }, "could not commit the log position");
    }
  }
}
