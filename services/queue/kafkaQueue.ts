import { Kafka, logLevel, Partitioners, type Admin, type Consumer, type EachBatchPayload, type KafkaMessage, type LogEntry, type Producer } from "kafkajs";
import type { Logger } from "pino";
import { DEFAULTS } from "../config.js";
import { RetryableError } from "../errors.js";
import { consumerLag } from "../metrics.js";
import { PendingBound, type PendingLimits } from "./pendingBound.js";
import { deadLetterTopic, messageReader, messageWriter, type Deliver, type Delivery, type EventConsumer, type EventPublisher, type Topic } from "./queue.js";

/**
 * The Kafka side of the queue, the only module that knows KafkaJS (in maintenance mode;
 * kept small so the client can be swapped). One publisher or consumer serves one topic;
 * each topic's consumers form their own group.
 */
export interface KafkaSettings {
  readonly brokers: readonly string[];
  readonly groupId: string;
  readonly clientId: string;
  /**
   * Longest a publish waits for the broker's acknowledgement (queued behind other sends
   * included) before it is refused as retryable (503 + Retry-After): a broker gone or hung
   * must not hold requests open for KafkaJS's own retries and request timeouts.
   */
  readonly sendTimeoutMs?: number;
  /** Where KafkaJS's own lines go (group joins, rebalances, connection errors), at the logger's level. */
  readonly log?: Logger;
}

/**
 * KafkaJS's levels by pino's. KafkaJS logs at info what an operator wants (joins, assignments),
 * and at error every protocol error it then retries (a heartbeat refused during a rebalance):
 * those come out as warnings; what it gives up on, the consumer logs as an error itself.
 */
function kafkaLogLevel(log: Logger | undefined): logLevel {
  if (!log) return logLevel.NOTHING;
  const level = log.levelVal;
  if (level <= 20) return logLevel.DEBUG;
  if (level <= 30) return logLevel.INFO;
  return level <= 40 ? logLevel.WARN : logLevel.NOTHING;
}

function kafkaLogCreator(log: Logger | undefined) {
  return () =>
    ({ namespace, level, log: { message, timestamp: _timestamp, logger: _logger, ...fields } }: LogEntry) => {
      const line = { kafkajs: namespace, ...fields };
      if (level === logLevel.ERROR || level === logLevel.WARN) log?.warn(line, message);
      else if (level === logLevel.INFO) log?.info(line, message);
      else log?.debug(line, message);
    };
}

function kafkaClient(settings: KafkaSettings): Kafka {
  return new Kafka({
    clientId: settings.clientId,
    brokers: [...settings.brokers],
    logLevel: kafkaLogLevel(settings.log),
    logCreator: kafkaLogCreator(settings.log),
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
  });
}

interface PendingSend<T> {
  readonly messages: readonly T[];
  readonly weightBytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

/** Settles once: the first of the broker's answer and the deadline wins. */
function settleOnce(resolve: () => void, reject: (err: unknown) => void, timer: { clear(): void }): Pick<PendingSend<unknown>, "resolve" | "reject"> {
  let settled = false;
  const once = (settle: () => void) => {
    if (settled) return;
    settled = true;
    timer.clear();
    settle();
  };
  return { resolve: () => once(resolve), reject: (err) => once(() => reject(err)) };
}

const MAX_MESSAGES_PER_SEND = 10_000;

/**
 * Publishes with acks=all; answers only once the broker has the events. Requests that
 * arrive while a send is in flight go out together in the next send (a group commit),
 * so throughput grows with load instead of paying one round trip per request.
 */
export class KafkaEventPublisher<T> implements EventPublisher<T> {
  private readonly producer: Producer;
  private connected: Promise<void> | null = null;
  private waiting: PendingSend<T>[] = [];
  private inFlight: Promise<void> | null = null;
  private readonly bound: PendingBound;
  private readonly sendTimeoutMs: number;
  private readonly write: (message: T) => string;

  constructor(private readonly topic: Topic<T>, settings: KafkaSettings, limits: PendingLimits) {
    this.bound = new PendingBound(limits, topic.name);
    this.write = messageWriter(topic);
    this.sendTimeoutMs = settings.sendTimeoutMs ?? DEFAULTS.KAFKA_SEND_TIMEOUT_MS;
    this.producer = kafkaClient(settings).producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
  }

  publish(messages: readonly T[], weightBytes = 0): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    try {
      this.bound.admit(messages.length, weightBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      let timeout: NodeJS.Timeout | undefined;
      const pending: PendingSend<T> = { messages, weightBytes, ...settleOnce(resolve, reject, { clear: () => clearTimeout(timeout) }) };
      timeout = setTimeout(() => this.expire(pending), this.sendTimeoutMs);
      this.waiting.push(pending);
      this.kick();
    });
  }

  /**
   * The deadline passed: refused as retryable. Still waiting, it is taken out and its room
   * released; already in a send, its room is released when that send ends (the broker may
   * still take it: a client's retry then rewrites the same calls).
   */
  private expire(pending: PendingSend<T>): void {
    const at = this.waiting.indexOf(pending);
    if (at >= 0) {
      this.waiting.splice(at, 1);
      this.bound.release(pending.messages.length, pending.weightBytes);
    }
    pending.reject(new RetryableError(`queue unavailable: no acknowledgement from Kafka within ${this.sendTimeoutMs} ms`, 2));
  }

  async healthy(): Promise<boolean> {
    try {
      await this.connect();
      return true;
    } catch {
      this.connected = null;
      return false;
    }
  }

  async close(): Promise<void> {
    while (this.inFlight || this.waiting.length > 0) {
      this.kick();
      await this.inFlight;
    }
    await this.producer.disconnect();
  }

  private kick(): void {
    if (this.inFlight || this.waiting.length === 0) return;
    const batch: PendingSend<T>[] = [];
    let count = 0;
    while (this.waiting.length > 0 && (batch.length === 0 || count + this.waiting[0]!.messages.length <= MAX_MESSAGES_PER_SEND)) {
      const next = this.waiting.shift()!;
      batch.push(next);
      count += next.messages.length;
    }
    const bytes = batch.reduce((n, p) => n + p.weightBytes, 0);
    this.inFlight = this.send(batch).finally(() => {
      this.bound.release(count, bytes);
      this.inFlight = null;
      this.kick();
    });
  }

  private async send(batch: PendingSend<T>[]): Promise<void> {
    try {
      await this.connect();
      await this.producer.send({
        topic: this.topic.name,
        acks: -1,
        messages: batch.flatMap((p) => p.messages.map((m) => ({ key: this.topic.key(m), value: this.write(m) }))),
      });
      for (const p of batch) p.resolve();
    } catch (err) {
      this.connected = null;
      const failure = new RetryableError(`queue unavailable: ${err instanceof Error ? err.message : String(err)}`, 2);
      for (const p of batch) p.reject(failure);
    }
  }

  private connect(): Promise<void> {
    this.connected ??= this.producer.connect();
    return this.connected;
  }
}

/** Protocol errors that mean this member must rejoin its group (the partition may be another's now). */
const REJOIN_TYPES = new Set(["REBALANCE_IN_PROGRESS", "ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "NOT_COORDINATOR_FOR_GROUP"]);
/** KafkaJS's messages of those errors: its retrier rewraps a protocol error without its type. */
const REJOIN_MESSAGES = ["The group is rebalancing, so a rejoin is needed", "Specified group generation id is not valid", "The coordinator is not aware of this member"];

/**
 * A commit or heartbeat refused because the group is rebalancing. Thrown out of eachBatch
 * it crashed the consumer for good when KafkaJS had rewrapped it as non-retriable (seen
 * with two workers, one killed): the survivor then consumed nothing more.
 */
function mustRejoin(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    const type = (e as { type?: unknown }).type;
    if ((typeof type === "string" && REJOIN_TYPES.has(type)) || REJOIN_MESSAGES.some((m) => e instanceof Error && e.message.includes(m))) return true;
  }
  return false;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Wait before a consumer that KafkaJS gave up on is started again, doubling while it fails. */
const CONSUMER_RESTART_MS = 1_000;
const CONSUMER_RESTART_MAX_MS = 30_000;

/**
 * Consumes in batches and commits a partition's offsets only after the worker's delivery
 * (worker/delivery.ts) stored or set aside the whole batch (at-least-once). Every message is
 * checked against the topic's schema first: one that is not JSON or not of the topic's shape
 * goes to the dead-letter topic, logged, as do the messages the delivery sets aside.
 */
export class KafkaEventConsumer<T> implements EventConsumer<T> {
  private readonly consumer: Consumer;
  private readonly deadLetters: Producer;
  private readonly read: (text: string) => T | null;
  private readonly write: (message: T) => string;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly topic: Topic<T>,
    settings: KafkaSettings,
    private readonly options: { maxWaitMs: number; maxBatchEvents: number; log: Logger },
  ) {
    this.read = messageReader(topic);
    this.write = messageWriter(topic);
    const kafka = kafkaClient(settings);
    this.consumer = kafka.consumer({
      groupId: settings.groupId,
      // A crashed worker's partitions move to the others after this long.
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: options.maxWaitMs,
      minBytes: 1,
      maxBytesPerPartition: 16 * 1024 * 1024,
      allowAutoTopicCreation: true,
    });
    this.deadLetters = kafka.producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
  }

  async start(handler: Deliver<T>): Promise<void> {
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      this.options.log.error({ err: payload.error.message, restart: payload.restart }, "Kafka consumer crashed");
      // KafkaJS gives up on an error it deems not retriable; a worker that consumes nothing
      // while alive would hold its partitions' backlog back unnoticed, so it starts again.
      if (!payload.restart && !this.stopping) this.restartAfter(CONSUMER_RESTART_MS, handler);
    });
    await this.run(handler);
  }

  private async run(handler: Deliver<T>): Promise<void> {
    await this.consumer.connect();
    await this.deadLetters.connect();
    await this.consumer.subscribe({ topics: [this.topic.name], fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async (payload) => {
        const { batch } = payload;
        try {
          await this.writeBatch(handler, payload);
        } catch (err) {
          if (!mustRejoin(err)) throw err;
          // The slices stored so far are committed; the rest is read again by the partition's next owner.
          this.options.log.warn({ err: err instanceof Error ? err.message : String(err), partition: batch.partition }, "consumer group rebalancing: batch left for the partition's next owner");
        }
      },
    });
  }

  private restartAfter(ms: number, handler: Deliver<T>): void {
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      if (this.stopping) return;
      this.options.log.warn("Kafka consumer starting again after a crash");
      this.run(handler)
        // A shutdown that came while it connected finds it disconnected, not running again.
        .then(() => (this.stopping ? this.consumer.disconnect() : undefined))
        .catch((err: unknown) => {
          this.options.log.error({ err: err instanceof Error ? err.message : String(err) }, "Kafka consumer could not start again; retrying");
          this.restartAfter(Math.min(ms * 2, CONSUMER_RESTART_MAX_MS), handler);
        });
    }, ms);
  }

  /**
   * A fetch can hold a whole backlog (tens of thousands of events). It is written in
   * slices of maxBatchEvents, each committed once stored, with a heartbeat between
   * slices: one long write must not outlive the group session and stall the group.
   */
  private async writeBatch(deliver: Deliver<T>, { batch, heartbeat, isRunning, isStale, resolveOffset }: EachBatchPayload): Promise<void> {
    const size = this.options.maxBatchEvents;
    const delivery: Delivery<T> = {
      live: () => !this.stopping && isRunning() && !isStale(),
      pause: async (ms) => {
        await sleep(ms);
        await heartbeat();
      },
      deadLetter: (messages) => this.toDeadLetter(messages.map((m) => ({ key: this.topic.key(m), value: this.write(m) }))),
    };
    for (let from = 0; from < batch.messages.length; from += size) {
      if (!delivery.live()) return;
      const slice = batch.messages.slice(from, from + size);
      const { valid, malformed } = this.check(slice);
      if (!(await deliver(valid, delivery))) return;
      if (malformed.length > 0) await this.setAsideMalformed(malformed, batch.partition);
      const last = slice[slice.length - 1]!;
      resolveOffset(last.offset);
      await this.consumer.commitOffsets([
        { topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() },
      ]);
      consumerLag.set({ topic: batch.topic, partition: String(batch.partition) }, Number(BigInt(batch.highWatermark) - BigInt(last.offset) - 1n));
      await heartbeat();
    }
  }

  async shutdown(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    await this.consumer.disconnect();
    await this.deadLetters.disconnect();
  }

  private check(messages: readonly KafkaMessage[]): { valid: T[]; malformed: KafkaMessage[] } {
    const valid: T[] = [];
    const malformed: KafkaMessage[] = [];
    for (const m of messages) {
      const message = m.value ? this.read(m.value.toString()) : null;
      if (message === null) malformed.push(m);
      else valid.push(message);
    }
    return { valid, malformed };
  }

  private async setAsideMalformed(messages: readonly KafkaMessage[], partition: number) {
    this.options.log.error(
      { topic: this.topic.name, partition, offsets: messages.map((m) => m.offset), count: messages.length },
      "malformed messages sent to the dead-letter topic",
    );
    await this.toDeadLetter(messages.map((m) => ({ key: m.key, value: m.value })));
  }

  private async toDeadLetter(messages: { key: Buffer | string | null; value: Buffer | string | null }[]) {
    await this.deadLetters.send({ topic: deadLetterTopic(this.topic.name), acks: -1, messages });
  }
}

/** How often a waiting barrier reads the group's committed offsets (one read shared by every waiter). */
const STORED_POLL_MS = 25;

interface OffsetsWaiter {
  /** The topic's end offsets when the wait began, by partition: null until the next poll takes them. */
  ends: Map<number, bigint> | null;
  readonly resolve: () => void;
}

/**
 * Read-your-writes with Kafka, in any process: `stored` takes the topic's end offsets
 * (everything any ingest process had acknowledged by then), then waits until the worker
 * group's committed offsets reach them (the consumer commits each slice once stored). One
 * poll of the broker serves every concurrent waiter. Scopes are not told apart: a
 * partition holds many projects, so a wait for some covers the whole topic.
 */
export class KafkaStoredOffsets {
  private readonly admin: Admin;
  private connected: Promise<void> | null = null;
  private waiters: OffsetsWaiter[] = [];
  private polling: Promise<void> | null = null;
  private closed = false;

  constructor(private readonly topic: string, private readonly settings: KafkaSettings, private readonly pollMs = STORED_POLL_MS) {
    this.admin = kafkaClient(settings).admin();
  }

  stored(timeoutMs: number): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new RetryableError(`not stored within ${timeoutMs} ms`, 1));
      }, timeoutMs);
      const waiter: OffsetsWaiter = { ends: null, resolve: () => (clearTimeout(timer), resolve()) };
      this.waiters.push(waiter);
      this.polling ??= this.poll().finally(() => (this.polling = null));
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.polling;
    if (this.connected) await this.admin.disconnect();
  }

  /** While anyone waits: take end offsets for the newcomers, then the committed offsets for all. */
  private async poll(): Promise<void> {
    while (this.waiters.length > 0 && !this.closed) {
      try {
        const newcomers = this.waiters.filter((w) => w.ends === null);
        if (newcomers.length > 0) {
          const ends = await this.endOffsets();
          for (const w of newcomers) w.ends = ends;
        }
        const committed = await this.committedOffsets();
        for (const w of this.waiters) if (w.ends && reached(committed, w.ends)) w.resolve();
        this.waiters = this.waiters.filter((w) => !(w.ends && reached(committed, w.ends)));
      } catch (err) {
        // A broker not answering: the waiters time out unless it answers before.
        this.connected = null;
        this.settings.log?.debug({ err: err instanceof Error ? err.message : String(err) }, "read-your-writes: offsets not read");
      }
      if (this.waiters.length > 0) await sleep(this.pollMs);
    }
  }

  private connect(): Promise<void> {
    this.connected ??= this.admin.connect();
    return this.connected;
  }

  private async endOffsets(): Promise<Map<number, bigint>> {
    await this.connect();
    const offsets = await this.admin.fetchTopicOffsets(this.topic);
    return new Map(offsets.map((p) => [p.partition, BigInt(p.high)]));
  }

  /** The group's committed offsets; a partition it never committed counts as 0. */
  private async committedOffsets(): Promise<Map<number, bigint>> {
    await this.connect();
    const [topic] = await this.admin.fetchOffsets({ groupId: this.settings.groupId, topics: [this.topic] });
    return new Map((topic?.partitions ?? []).map((p) => [p.partition, p.offset === "-1" ? 0n : BigInt(p.offset)]));
  }
}

function reached(committed: ReadonlyMap<number, bigint>, ends: ReadonlyMap<number, bigint>): boolean {
  for (const [partition, end] of ends) if ((committed.get(partition) ?? 0n) < end) return false;
  return true;
}
