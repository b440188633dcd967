import { Kafka, logLevel, Partitioners, type Consumer, type KafkaMessage, type Producer } from "kafkajs";
import type { Logger } from "pino";
import { QueueFullError, RetryableError } from "../errors.js";
import { StoreUnavailableError } from "../store/clickhouse.js";
import { eventKey, type TraceEvent } from "./events.js";
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

/** Publishes with acks=all; answers only once the broker has the events. */
export class KafkaEventPublisher implements EventPublisher {
  private readonly producer: Producer;
  private connected: Promise<void> | null = null;
  private inFlightEvents = 0;

  constructor(private readonly settings: KafkaSettings, private readonly maxInFlightEvents: number) {
    this.producer = kafkaClient(settings).producer({ allowAutoTopicCreation: true, createPartitioner: Partitioners.DefaultPartitioner });
  }

  async publish(events: readonly TraceEvent[]): Promise<void> {
    if (events.length === 0) return;
    if (this.inFlightEvents + events.length > this.maxInFlightEvents) throw new QueueFullError("producer buffer full", 1);
    this.inFlightEvents += events.length;
    try {
      await this.connect();
      await this.producer.send({
        topic: this.settings.topic,
        acks: -1,
        messages: events.map((e) => ({ key: eventKey(e), value: JSON.stringify(e) })),
      });
    } catch (err) {
      this.connected = null;
      throw new RetryableError(`queue unavailable: ${err instanceof Error ? err.message : String(err)}`, 2);
    } finally {
      this.inFlightEvents -= events.length;
    }
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
    await this.producer.disconnect();
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
    private readonly options: { maxWaitMs: number; log: Logger },
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
        if (batch.messages.length === 0) return;
        const events: TraceEvent[] = [];
        const poison: KafkaMessage[] = [];
        for (const m of batch.messages) {
          const event = parseMessage(m);
          if (event) events.push(event);
          else poison.push(m);
        }
        await this.deliver(handler, events, heartbeat, () => isRunning() && !isStale());
        if (poison.length > 0) await this.toDeadLetter(poison.map((m) => ({ key: m.key, value: m.value })));
        const last = batch.messages[batch.messages.length - 1]!;
        resolveOffset(last.offset);
        await this.consumer.commitOffsets([
          { topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() },
        ]);
      },
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
        if (!(err instanceof StoreUnavailableError)) return this.deliverOneByOne(handler, events);
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
        if (err instanceof StoreUnavailableError) throw err;
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
