import { type Batch, type Consumer, type EachBatchPayload, type KafkaMessage, type Producer, Partitioners } from "kafkajs";
import type { Logger } from "pino";
import { errorText } from "../../errors.js";
import { consumerLag, fetchedBatches, skippedMessages } from "../../metrics.js";
import { retryBackoffMs } from "../backoff.js";
import { deadLetterTopic, messageWriter, type Deliver, type Delivery, type EventConsumer, type Topic } from "../queue.js";
import { kafkaClient, sleep, type KafkaSettings } from "./client.js";
import { GroupOffsets } from "./groupOffsets.js";
import { recordReader, type RecordContents } from "./records.js";

/** Protocol errors that mean this member must rejoin its group (the partition may be another's now). */
const REJOIN_TYPES = new Set(["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "NOT_COORDINATOR_FOR_GROUP"]);
/** KafkaJS's messages of those errors: its retrier rewraps a protocol error without its type. */
const REJOIN_MESSAGES = ["The group is rebalancing, so a rejoin is needed", "Specified group generation id is not valid", "The coordinator is not aware of this member"];

/**
 * A commit refused because the group is rebalancing. Thrown out of KafkaJS's handler it
 * crashed the consumer for good when KafkaJS had rewrapped it as non-retriable (seen with two
 * workers, one killed): the survivor then consumed nothing more.
 */
function mustRejoin(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const type = (e as { type?: unknown }).type;
    if ((typeof type === "string" && REJOIN_TYPES.has(type)) || REJOIN_MESSAGES.some((m) => e instanceof Error && e.message.includes(m))) return true;
  }
  return false;
}

/** Wait before a consumer that KafkaJS gave up on is started again, doubling while it fails. */
const CONSUMER_RESTART_MS = 1_000;
const CONSUMER_RESTART_MAX_MS = 30_000;
/** How often a fetch waiting for room in the buffer heartbeats, so the group keeps the member. */
const ROOM_HEARTBEAT_MS = 1_000;
/**
 * Longest a fetch waits at the broker for messages: short, so that a write to an idle worker is
 * fetched soon even from a broker that answers a fetch only when its wait ran out (the
 * Kafka-protocol mock of the tests does), whatever the batch's own wait.
 */
const FETCH_MAX_WAIT_MS = 200;
/**
 * A batch waiting to fill goes once fetches brought nothing for longer than a fetch waits at
 * the broker (and its round trip): the burst that filled it is over, and waiting out
 * `maxWaitMs` would only delay it. Under a steady stream fetches keep bringing messages and
 * the batch fills for `maxWaitMs`. Shorter, and a fetch that met an empty partition of the
 * mock broker (it answers only when its wait ran out) would end batches in mid-burst.
 */
const QUIET_MS = FETCH_MAX_WAIT_MS + 100;
/** Batches of the buffer at most, in events and bytes: one stored while the next fills. */
const BUFFERED_BATCHES = 2;

/** A record fetched and read, or a slice of one: a batch takes a record's messages in slices when it is bigger than the room left. */
interface FetchedRecord<T> extends RecordContents<T> {
  readonly offset: bigint;
  /** The record's key (a packed record has none): what is malformed goes to the dead-letter topic with it. */
  readonly key: Buffer | null;
  /** Its share of the record's bytes. */
  readonly bytes: number;
  /** Whether this slice ends the record: only then is the record's offset committed past. */
  readonly last: boolean;
}

/** Records fetched from one partition and not yet stored. */
interface Fetched<T> {
  readonly partition: number;
  readonly records: FetchedRecord<T>[];
  /** The group generation (this consumer's count of joins) the records were fetched in. */
  readonly generation: number;
}

/** What a record held that is not of the topic's shape: where it was, and its text. */
interface Malformed {
  readonly at: string;
  readonly key: Buffer | null;
  readonly value: string;
}

/** A record's messages count toward a batch's events, and so do the malformed ones. */
const eventsOf = (record: RecordContents<unknown>): number => record.messages.length + record.malformed.length;

/** The first `count` events of a record, and the rest of it. */
function cut<T>(record: FetchedRecord<T>, count: number): [FetchedRecord<T>, FetchedRecord<T>] {
  const headBytes = Math.round((record.bytes * count) / eventsOf(record));
  const malformedTaken = Math.max(0, count - record.messages.length);
  return [
    { ...record, messages: record.messages.slice(0, count), malformed: record.malformed.slice(0, malformedTaken), bytes: headBytes, last: false },
    { ...record, messages: record.messages.slice(count), malformed: record.malformed.slice(malformedTaken), bytes: record.bytes - headBytes },
  ];
}

export interface ConsumerOptions {
  readonly maxWaitMs: number;
  /** Most events, and message bytes, handed to the delivery at once. */
  readonly maxBatchEvents: number;
  readonly maxBatchBytes: number;
  readonly log: Logger;
}

/**
 * Consumes a topic for the worker and commits offsets only once the worker's delivery
 * (worker/delivery.ts) stored or set aside every message before them (at-least-once).
 *
 * Fetching and storing overlap: KafkaJS's handler only reads what a fetch brought (records of
 * one or many messages, records.ts) into a buffer (it waits while the buffer holds two
 * batches), and one loop stores the buffer in batches of up to `maxBatchEvents` events taken
 * across every partition this member holds, then commits each partition's offset in one
 * request: past its last record stored whole, or up to a record whose messages the batch
 * took only the first of (the rest go in the next batch). Under load a batch is what arrived
 * while the previous one was stored: one insert per table for all partitions, where a batch
 * per partition fetch made inserts of a few hundred rows. Messages of one partition stay in
 * order; nothing orders partitions, as nothing does in Kafka.
 *
 * A rebalance drops what the buffer holds: KafkaJS fetches a partition again from the group's
 * committed offset after every join, so those messages come back (to this member or another).
 * A batch being stored when it happens is stored, and its commit refused or taken: storing
 * twice is what redelivery does anyway (the worker's writes are idempotent).
 *
 * Every message is checked against the topic's schema; one that is not JSON or not of the
 * topic's shape goes to the dead-letter topic, logged, as do the messages the delivery sets
 * aside. A partition whose fetch starts past the offset expected (the broker trimmed what
 * the group had not read yet: retention) is logged as an error naming the offsets skipped,
 * and counted (`queue_skipped_messages_total`).
 */
export class KafkaEventConsumer<T> implements EventConsumer<T> {
  private readonly consumer: Consumer;
  private readonly deadLetters: Producer;
  private readonly offsets: GroupOffsets;
  private readonly read: (bytes: Buffer) => RecordContents<T>;
  private readonly write: (message: T) => string;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;
  private buffer: Fetched<T>[] = [];
  private bufferedEvents = 0;
  private bufferedBytes = 0;
  private generation = 0;
  /** Per partition, the offset the next fetch should start at (known from a commit or a fetch of this member). */
  private readonly expected = new Map<number, bigint>();
  /**
   * Per partition, the group's committed offset as read before this member's first fetch or
   * as it committed since. KafkaJS answers an out-of-range fetch by committing the "earliest"
   * sentinel (-2) over the group's offset: a join read after that finds no position, and the
   * check falls back on this one (which a member that committed since may have passed: the
   * loss is then told larger than it is, never smaller).
   */
  private readonly committedBefore = new Map<number, bigint>();
  private storing: Promise<void> | null = null;
  private roomWaiters: (() => void)[] = [];
  /** When the last batch went to the delivery. */
  private lastBatchAt = 0;
  /** When a fetch last brought messages into the buffer. */
  private lastFetchAt = 0;
  /** Wakes a store loop that waits for its batch to fill. */
  private batchFull: (() => void) | null = null;

  constructor(
    private readonly topic: Topic<T>,
    settings: KafkaSettings,
    private readonly options: ConsumerOptions,
  ) {
    this.read = recordReader(topic);
    this.write = messageWriter(topic);
    const kafka = kafkaClient(settings);
    this.consumer = kafka.consumer({
      groupId: settings.groupId,
      // A crashed worker's partitions move to the others after this long.
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: FETCH_MAX_WAIT_MS,
      minBytes: 1,
      maxBytesPerPartition: 16 * 1024 * 1024,
      allowAutoTopicCreation: true,
    });
    this.deadLetters = kafka.producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
    this.offsets = new GroupOffsets(topic.name, settings);
  }

  async start(deliver: Deliver<T>): Promise<void> {
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      this.options.log.error({ err: payload.error.message, restart: payload.restart }, "Kafka consumer crashed");
      // KafkaJS gives up on an error it deems not retriable; a worker that consumes nothing
      // while alive would hold its partitions' backlog back unnoticed, so it starts again.
      if (!payload.restart && !this.stopping) this.restartAfter(CONSUMER_RESTART_MS, deliver);
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) => this.rejoined(payload.memberAssignment[this.topic.name] ?? []));
    await this.run(deliver);
  }

  async shutdown(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.wakeFetches();
    await this.storing;
    await this.consumer.disconnect();
    await this.deadLetters.disconnect();
    await this.offsets.close();
  }

  private async run(deliver: Deliver<T>): Promise<void> {
    await this.consumer.connect();
    await this.deadLetters.connect();
    await this.consumer.subscribe({ topics: [this.topic.name], fromBeginning: true });
    await this.offsets.positions()
      .then((committed) => committed.forEach((offset, partition) => this.committedBefore.set(partition, offset)))
      .catch((err: unknown) => this.options.log.warn({ err: errorText(err) }, "committed offsets not read before the start"));
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: (payload) => this.fetched(payload, deliver),
    });
  }

  private restartAfter(ms: number, deliver: Deliver<T>): void {
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      this.options.log.warn("Kafka consumer starting again after a crash");
      this.run(deliver)
        // A shutdown that came while it connected finds it disconnected, not running again.
        .then(() => (this.stopping ? this.consumer.disconnect() : undefined))
        .catch((err: unknown) => {
          this.options.log.error({ err: errorText(err) }, "Kafka consumer could not start again; retrying");
          this.restartAfter(Math.min(ms * 2, CONSUMER_RESTART_MAX_MS), deliver);
        });
    }, ms);
  }

  /**
   * A join (after a rebalance, or the first): what the buffer holds will be fetched again from
   * the committed offsets, which are also where each assigned partition's next fetch must start.
   */
  private rejoined(partitions: readonly number[]): void {
    const generation = ++this.generation;
    this.buffer = [];
    this.bufferedEvents = 0;
    this.bufferedBytes = 0;
    this.expected.clear();
    this.wakeFetches();
    this.offsets.positions()
      .then((committed) => {
        if (generation !== this.generation) return;
        for (const partition of partitions) {
          const offset = committed.get(partition) ?? this.committedBefore.get(partition);
          if (offset !== undefined && !this.expected.has(partition)) this.expected.set(partition, offset);
        }
      })
      .catch((err: unknown) => this.options.log.warn({ err: errorText(err) }, "committed offsets not read after a join: the first fetch of each partition is not checked for skipped offsets"));
  }

  /** KafkaJS's handler of one partition's fetch: into the buffer once there is room, then on to the next fetch. */
  private async fetched({ batch, heartbeat, isRunning, isStale, resolveOffset }: EachBatchPayload, deliver: Deliver<T>): Promise<void> {
    fetchedBatches.inc({ topic: batch.topic });
    if (batch.messages.length === 0) return;
    const generation = this.generation;
    while (this.full() && !this.stopping && isRunning() && !isStale() && generation === this.generation) {
      await Promise.race([new Promise<void>((r) => this.roomWaiters.push(r)), sleep(ROOM_HEARTBEAT_MS)]);
      await heartbeat().catch((err: unknown) => {
        if (!mustRejoin(err)) throw err;
      });
    }
    if (this.stopping || !isRunning() || isStale() || generation !== this.generation) return;
    this.checkContinuity(batch);
    const last = batch.messages[batch.messages.length - 1]!;
    this.expected.set(batch.partition, BigInt(last.offset) + 1n);
    const records = batch.messages.map((m) => this.readRecord(m));
    this.buffer.push({ partition: batch.partition, records, generation });
    this.lastFetchAt = Date.now();
    for (const record of records) {
      this.bufferedEvents += eventsOf(record);
      this.bufferedBytes += record.bytes;
    }
    consumerLag.set({ topic: batch.topic, partition: String(batch.partition) }, Number(BigInt(batch.highWatermark) - BigInt(last.offset) - 1n));
    resolveOffset(last.offset);
    if (this.full(1)) this.batchFull?.();
    this.storing ??= this.storeBuffered(deliver).finally(() => (this.storing = null));
  }

  private readRecord(m: KafkaMessage): FetchedRecord<T> {
    // A record without a value (a tombstone: nothing here writes one) is set aside like any record not of the topic's shape.
    const contents = m.value ? this.read(m.value) : { messages: [], malformed: [""] };
    return { ...contents, offset: BigInt(m.offset), key: m.key, bytes: m.value?.length ?? 0, last: true };
  }

  /** Whether the buffer holds `batches` full batches (by events or bytes). */
  private full(batches = BUFFERED_BATCHES): boolean {
    return this.bufferedEvents >= batches * this.options.maxBatchEvents || this.bufferedBytes >= batches * this.options.maxBatchBytes;
  }

  private wakeFetches(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }

  /** A fetch that starts past the offset this member expected: the broker no longer holds the messages between (retention). */
  private checkContinuity(batch: Batch): void {
    const expected = this.expected.get(batch.partition);
    const first = BigInt(batch.messages[0]!.offset);
    if (expected === undefined || first <= expected) return;
    const skipped = Number(first - expected);
    skippedMessages.inc({ topic: batch.topic, partition: String(batch.partition) }, skipped);
    this.options.log.error(
      { topic: batch.topic, partition: batch.partition, from: expected.toString(), to: (first - 1n).toString(), skipped },
      "messages lost: the broker no longer holds offsets the worker group had not stored (its retention is shorter than the group's lag)",
    );
  }

  /**
   * Stores the buffer, a batch at a time, until it is empty. A batch goes at once when a full
   * one is buffered or none went out in the last `maxWaitMs`, and once fetches bring nothing
   * more for QUIET_MS; else it fills for up to `maxWaitMs`, so that a steady stream makes one
   * insert per table every `maxWaitMs` rather than one per fetch (on a cluster each insert
   * costs every replica a part and ZooKeeper a few dozen transactions).
   */
  private async storeBuffered(deliver: Deliver<T>): Promise<void> {
    while (this.buffer.length > 0 && !this.stopping) {
      const wait = Math.min(this.lastBatchAt + this.options.maxWaitMs, this.lastFetchAt + QUIET_MS) - Date.now();
      if (wait > 0 && !this.full(1)) {
        await Promise.race([sleep(wait), new Promise<void>((r) => (this.batchFull = r))]);
        this.batchFull = null;
        continue;
      }
      this.lastBatchAt = Date.now();
      const generation = this.generation;
      const taken = this.take();
      this.wakeFetches();
      await this.storeBatch(taken, generation, deliver);
    }
  }

  /**
   * Delivers one batch and commits it; a failure past the delivery's own retries (the
   * dead-letter topic or the commit unreachable) is retried whole: storing again is harmless.
   * Given up only when the group moved on (its partitions are fetched again from the committed
   * offsets) or the consumer stops.
   */
  private async storeBatch(taken: readonly Fetched<T>[], generation: number, deliver: Deliver<T>): Promise<void> {
    const { valid, malformed } = this.check(taken);
    const delivery = this.delivery(generation);
    for (let attempt = 0; ; attempt++) {
      try {
        if (!(await deliver(valid, delivery))) return;
        if (malformed.length > 0) await this.setAsideMalformed(malformed);
        await this.commit(taken);
        return;
      } catch (err) {
        this.options.log.error({ err: errorText(err), topic: this.topic.name, attempt }, "batch stored but not committed; trying again");
        if (!delivery.live()) return;
        await sleep(retryBackoffMs(attempt));
      }
    }
  }

  /**
   * The oldest buffered records, up to a batch: whole fetches, the last one cut where the
   * batch is full, and a record cut too when its messages overflow `maxBatchEvents` (a first
   * record bigger than `maxBatchBytes` still goes, alone).
   */
  private take(): Fetched<T>[] {
    const { maxBatchEvents, maxBatchBytes } = this.options;
    const taken: Fetched<T>[] = [];
    let events = 0;
    let bytes = 0;
    const room = () => events < maxBatchEvents && (bytes < maxBatchBytes || events === 0);
    while (this.buffer.length > 0 && room()) {
      const next = this.buffer[0]!;
      const records: FetchedRecord<T>[] = [];
      while (next.records.length > 0 && room()) {
        let record = next.records[0]!;
        if (eventsOf(record) > maxBatchEvents - events) [record, next.records[0]] = cut(record, maxBatchEvents - events);
        else next.records.shift();
        records.push(record);
        events += eventsOf(record);
        bytes += record.bytes;
      }
      if (next.records.length === 0) this.buffer.shift();
      taken.push({ ...next, records });
    }
    this.bufferedEvents -= events;
    this.bufferedBytes -= bytes;
    return taken;
  }

  private delivery(generation: number): Delivery<T> {
    return {
      // A batch stops being retried once the group moved on: its partitions may be another's.
      live: () => !this.stopping && generation === this.generation,
      pause: (ms) => sleep(ms),
      deadLetter: (messages) => this.toDeadLetter(messages.map((m) => ({ key: this.topic.key(m), value: this.write(m) }))),
    };
  }

  /** One commit for every partition of the batch: each one's offset past its last record stored whole (before a record cut). */
  private async commit(taken: readonly Fetched<T>[]): Promise<void> {
    const next = new Map<number, string>();
    for (const { partition, records } of taken) {
      const last = records[records.length - 1]!;
      next.set(partition, (last.last ? last.offset + 1n : last.offset).toString());
    }
    try {
      await this.consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic: this.topic.name, partition, offset })));
      for (const [partition, offset] of next) this.committedBefore.set(partition, BigInt(offset));
    } catch (err) {
      if (!mustRejoin(err)) throw err;
      // Stored, not committed: the partitions' next owner stores these messages again.
      this.options.log.warn({ err: errorText(err), partitions: [...next.keys()] }, "consumer group rebalancing: a stored batch left uncommitted");
    }
  }

  private check(taken: readonly Fetched<T>[]): { valid: T[]; malformed: Malformed[] } {
    const valid: T[] = [];
    const malformed: Malformed[] = [];
    for (const { partition, records } of taken) {
      for (const record of records) {
        for (const message of record.messages) valid.push(message);
        for (const value of record.malformed) malformed.push({ at: `${partition}:${record.offset}`, key: record.key, value });
      }
    }
    return { valid, malformed };
  }

  private async setAsideMalformed(malformed: readonly Malformed[]) {
    this.options.log.error({ topic: this.topic.name, at: [...new Set(malformed.map((m) => m.at))], count: malformed.length }, "malformed messages sent to the dead-letter topic");
    await this.toDeadLetter(malformed.map(({ key, value }) => ({ key, value })));
  }

  private async toDeadLetter(messages: { key: Buffer | string | null; value: Buffer | string | null }[]) {
    await this.deadLetters.send({ topic: deadLetterTopic(this.topic.name), acks: -1, messages });
  }
}
