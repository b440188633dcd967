import { Kafka, logLevel, Partitioners, type Consumer, type KafkaMessage, type Producer } from "kafkajs";
import type { Logger } from "pino";
import { RetryableError } from "../errors.js";
import { eventKey, type TraceEvent } from "./events.js";
import { PendingBound, type PendingLimits } from "./pendingBound.js";
import type { BatchHandler, EventConsumer, EventPublisher } from "./queue.js";

/**
 * The Kafka side of the queue, the only module that knows KafkaJS (in maintenance mode;
 * kept small so the client can be swapped).
 */
export interface KafkaSettings {
  readonly brokers: readonly string[];
  readonly topic: string;
  readonly groupId: string;
  readonly clientId: string;
}

function kafkaClient(settings: KafkaSettings): Kafka {
  return new Kafka({
    clientId: settings.clientId,
    brokers: [...settings.brokers],
    logLevel: logLevel.NOTHING,
    retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
  });
}

export const deadLetterTopic = (topic: string): string => `${topic}.dead-letter`;

interface PendingSend {
  readonly events: readonly TraceEvent[];
  readonly weightBytes: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

const MAX_EVENTS_PER_SEND = 10_000;

/**
 * Publishes with acks=all; answers only once the broker has the events. Requests that
 * arrive while a send is in flight go out together in the next send (a group commit),
 * so throughput grows with load instead of paying one round trip per request.
 */
export class KafkaEventPublisher implements EventPublisher {
  private readonly producer: Producer;
  private connected: Promise<void> | null = null;
  private waiting: PendingSend[] = [];
  private inFlight: Promise<void> | null = null;
  private readonly bound: PendingBound;

  constructor(private readonly settings: KafkaSettings, limits: PendingLimits) {
    this.bound = new PendingBound(limits);
    this.producer = kafkaClient(settings).producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
  }

  publish(events: readonly TraceEvent[], weightBytes = 0): Promise<void> {
    if (events.length === 0) return Promise.resolve();
    try {
      this.bound.admit(events.length, weightBytes);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<void>((resolve, reject) => {
      this.waiting.push({ events, weightBytes, resolve, reject });
      this.kick();
    });
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
    const batch: PendingSend[] = [];
    let count = 0;
    while (this.waiting.length > 0 && (batch.length === 0 || count + this.waiting[0]!.events.length <= MAX_EVENTS_PER_SEND)) {
      const next = this.waiting.shift()!;
      batch.push(next);
      count += next.events.length;
    }
    const bytes = batch.reduce((n, p) => n + p.weightBytes, 0);
    this.inFlight = this.send(batch).finally(() => {
      this.bound.release(count, bytes);
      this.inFlight = null;
      this.kick();
    });
  }

  private async send(batch: PendingSend[]): Promise<void> {
    try {
      await this.connect();
      await this.producer.send({
        topic: this.settings.topic,
        acks: -1,
        messages: batch.flatMap((p) => p.events.map((e) => ({ key: eventKey(e), value: JSON.stringify(e) }))),
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

function parseMessage(message: KafkaMessage): TraceEvent | null {
  try {
    return message.value ? (JSON.parse(message.value.toString()) as TraceEvent) : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Consumes in batches and commits a partition's offsets only after the handler stored the
 * whole batch (at-least-once). A store outage is retried with capped backoff, forever; a
 * batch the store refuses is retried event by event and the events that still fail go to
 * the dead-letter topic, never silently dropped.
 */
export class KafkaEventConsumer implements EventConsumer {
  private readonly consumer: Consumer;
  private readonly deadLetters: Producer;
  private stopping = false;

  constructor(
    private readonly settings: KafkaSettings,
    private readonly options: { maxWaitMs: number; maxBatchEvents: number; log: Logger },
  ) {
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

  async start(handler: BatchHandler): Promise<void> {
    await this.consumer.connect();
    await this.deadLetters.connect();
    await this.consumer.subscribe({ topics: [this.settings.topic], fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
        // A fetch can hold a whole backlog (tens of thousands of events). It is written in
        // slices of maxBatchEvents, each committed once stored, with a heartbeat between
        // slices: one long write must not outlive the group session and stall the group.
        const size = this.options.maxBatchEvents;
        for (let from = 0; from < batch.messages.length; from += size) {
          if (!isRunning() || isStale()) return;
          const slice = batch.messages.slice(from, from + size);
          const events: TraceEvent[] = [];
          const poison: KafkaMessage[] = [];
          for (const m of slice) {
            const event = parseMessage(m);
            if (event) events.push(event);
            else poison.push(m);
          }
          await this.deliver(handler, events, heartbeat, () => isRunning() && !isStale());
          if (poison.length > 0) await this.toDeadLetter(poison.map((m) => ({ key: m.key, value: m.value })));
          const last = slice[slice.length - 1]!;
          resolveOffset(last.offset);
          await this.consumer.commitOffsets([
            { topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() },
          ]);
          await heartbeat();
        }
      },
    });
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      this.options.log.error({ err: payload.error.message, restart: payload.restart }, "Kafka consumer crashed");
    });
  }

  async shutdown(): Promise<void> {
    this.stopping = true;
    await this.consumer.disconnect();
    await this.deadLetters.disconnect();
  }

  private async deliver(handler: BatchHandler, events: TraceEvent[], heartbeat: () => Promise<void>, alive: () => boolean) {
    for (let attempt = 0; ; attempt++) {
      try {
        await handler(events);
        return;
      } catch (err) {
        if (!(err instanceof RetryableError)) return this.deliverOneByOne(handler, events);
        if (this.stopping || !alive()) throw err;
        this.options.log.warn({ err: err.message, attempt }, "store unavailable, retrying batch");
        await sleep(Math.min(200 * 2 ** attempt, 5_000));
        await heartbeat();
      }
    }
  }

  private async deliverOneByOne(handler: BatchHandler, events: TraceEvent[]) {
    const failed: TraceEvent[] = [];
    for (const event of events) {
      try {
        await handler([event]);
      } catch (err) {
        if (err instanceof RetryableError) throw err;
        this.options.log.error({ err: err instanceof Error ? err.message : String(err), key: eventKey(event) }, "event refused by the store");
        failed.push(event);
      }
    }
    if (failed.length > 0) await this.toDeadLetter(failed.map((e) => ({ key: eventKey(e), value: JSON.stringify(e) })));
  }

  private async toDeadLetter(messages: { key: Buffer | string | null; value: Buffer | string | null }[]) {
    await this.deadLetters.send({ topic: deadLetterTopic(this.settings.topic), acks: -1, messages });
  }
}
