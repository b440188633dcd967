import { CompressionTypes, Partitioners, type ICustomPartitioner, type Producer } from "kafkajs";
import { DEFAULTS } from "../../config.js";
import { errorText, RetryableError } from "../../errors.js";
import { PendingBound, type PendingLimits } from "../pendingBound.js";
import type { EventPublisher, Topic } from "../queue.js";
import type { LagLimits } from "../lagBound.js";
import { kafkaClient, type KafkaSettings } from "./client.js";
import { KafkaLagWatch } from "./groupOffsets.js";
import { recordPacker, type PackedRecord } from "./records.js";

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
 * so throughput grows with load instead of paying one round trip per request. A send packs
 * its messages into a record per partition (records.ts). Record batches are gzip-compressed:
 * JSON events shrink several times over, so the brokers keep more of a backlog within their
 * retention and the workers fetch fewer bytes. With `lag`, a bulk write is held, then refused,
 * while the worker group lags past the bound (groupOffsets.ts).
 */
export class KafkaEventPublisher<T> implements EventPublisher<T> {
  private readonly producer: Producer;
  private connected: Promise<void> | null = null;
  private waiting: PendingSend<T>[] = [];
  private inFlight: Promise<void> | null = null;
  private readonly bound: PendingBound;
  private readonly sendTimeoutMs: number;
  private readonly pack: (messages: readonly T[], partitions: number) => PackedRecord[];
  private readonly lag: KafkaLagWatch | null;
  /**
   * The topic's partition count as KafkaJS's metadata last gave it to the partitioner, which
   * packing needs: 0 before the first send (which goes a record per message, making the topic
   * if it is missing, as any producer's first send does).
   */
  private partitions = 0;

  constructor(private readonly topic: Topic<T>, settings: KafkaSettings, limits: PendingLimits, lag?: LagLimits) {
    this.bound = new PendingBound(limits, topic.name);
    this.lag = lag ? new KafkaLagWatch(topic.name, settings, lag) : null;
    this.lag?.start();
    this.pack = recordPacker(topic);
    this.sendTimeoutMs = settings.sendTimeoutMs ?? DEFAULTS.KAFKA_SEND_TIMEOUT_MS;
    this.producer = kafkaClient(settings).producer({ allowAutoTopicCreation: true, createPartitioner: () => this.partitionerSeeingCount() });
  }

  publish(messages: readonly T[], weightBytes = 0): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    if (this.lag?.isBulk({ items: this.itemsOf(messages), bytes: weightBytes }) && this.lag.refusal() !== null) {
      return this.lag.admitBulk().then(() => this.enqueue(messages, weightBytes));
    }
    return this.enqueue(messages, weightBytes);
  }

  private enqueue(messages: readonly T[], weightBytes: number): Promise<void> {
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
    await this.lag?.close();
  }

  private itemsOf(messages: readonly T[]): number {
    const items = this.topic.items;
    return items ? messages.reduce((n, m) => n + items(m), 0) : messages.length;
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
      const records = this.pack(batch.flatMap((p) => p.messages), this.partitions);
      await this.producer.send({ topic: this.topic.name, acks: -1, compression: CompressionTypes.GZIP, messages: records });
      for (const p of batch) p.resolve();
    } catch (err) {
      this.connected = null;
      const failure = new RetryableError(`queue unavailable: ${errorText(err)}`, 2);
      for (const p of batch) p.reject(failure);
    }
  }

  private connect(): Promise<void> {
    this.connected ??= this.producer.connect();
    return this.connected;
  }

  /** KafkaJS's default partitioner (packed records name their partition; it keeps that), noting the topic's partition count. */
  private partitionerSeeingCount(): ReturnType<ICustomPartitioner> {
    const partitioner = Partitioners.DefaultPartitioner();
    return (args) => {
      this.partitions = args.partitionMetadata.length;
      return partitioner(args);
    };
  }
}

