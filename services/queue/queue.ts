import type { z } from "zod";
import { bytesFieldsOf, restoreBytes, toJsonValue } from "./bytesFields.js";
import { batchDuration, batchEvents, timed } from "../metrics.js";

/**
 * The queue between the stages: ingest → worker for call events (topic `traceEventsTopic`),
 * submitters → job runners for jobs (`jobsTopic`). One interface per side, generic over the
 * message type of a topic (`Topic`, below). Two implementations: the durable local log
 * (durableLog/, one machine) and Kafka (kafka/, scale-out).
 *
 * `publish` resolves only once the messages are durable: acknowledged by Kafka (acks=all),
 * or synced to the durable log; the worker stores them later. It rejects with
 * QueueFullError when bounded buffers are full and RetryableError when the messages could
 * not be made durable. `weightBytes` is the size of the request the messages came from: it
 * counts toward the memory bound.
 */
export interface EventPublisher<T> {
  publish(messages: readonly T[], weightBytes?: number): Promise<void>;
  healthy(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Read-your-writes: `stored` resolves once the messages acknowledged before the call are
 * stored by the worker (readable), or only those of these scopes (the topic's `readScope`:
 * projects); it rejects with RetryableError after `timeoutMs`. Both modes implement it, and
 * differ in what they see:
 * - the durable log (`DurableLogQueue`) waits for what this process acknowledged, per project;
 * - Kafka (`KafkaStoredOffsets`, queue/kafka/groupOffsets.ts) waits for what any process
 *   acknowledged (the topic's end offsets against the worker group's committed ones), for
 *   the whole topic whatever the scopes (a partition holds many projects).
 *
 * The modes' other differences: both bound the workers' lag, holding bulk writes then
 * refusing them with 429 (queue/lagBound.ts; the log per lane with queue/durableLog/admission/heldWrites.ts, Kafka
 * per partition with queue/kafka/groupOffsets.ts `KafkaLagWatch`); only the log stores single
 * writes through an express lane beside the batches (queue/durableLog/admission/expressLane.ts), as only
 * there is the worker in the same process.
 */
export interface ReadYourWrites {
  stored(timeoutMs: number, scopes?: readonly string[]): Promise<void>;
}

/** Stores one batch; it must throw unless every message of the batch is stored. */
export type BatchHandler<T> = (messages: readonly T[]) => Promise<void>;

/** What a consumer gives the worker's delivery of one batch (worker/delivery.ts). */
export interface Delivery<T> {
  /** False once the consumer stops (a drain's time is up, a partition lost): a batch not stored by then stays uncommitted. */
  live(): boolean;
  /** A backoff between attempts, cut short when the consumer stops (a Kafka consumer keeps its group membership meanwhile). */
  pause(ms: number): Promise<void>;
  /** Sets messages aside for a person (the log's dead-letter file, or the `<topic>.dead-letter` topic); never silently dropped. */
  deadLetter(messages: readonly T[], reason: string): Promise<void>;
}

/**
 * Delivers one batch: resolves true once every message is stored or set aside as a dead
 * letter, false when the consumer stopped first (nothing of the batch is committed then).
 */
export type Deliver<T> = (messages: readonly T[], delivery: Delivery<T>) => Promise<boolean>;

/**
 * The consuming side. `start` begins handing batches to `deliver`, in order; positions (log)
 * or offsets (Kafka) move past a batch only after it was delivered, in order. `shutdown`
 * stops intake, lets the batches in flight finish and commits.
 */
export interface EventConsumer<T> {
  start(deliver: Deliver<T>): Promise<void>;
  shutdown(): Promise<void>;
}

/** `handler` with its batches counted and timed (`worker_batch_events`, `worker_batch_seconds`) under the topic's name. */
export function measuredBatches<T>(topic: string, handler: BatchHandler<T>): BatchHandler<T> {
  return async (messages) => {
    batchEvents.observe({ topic }, messages.length);
    await timed(batchDuration, { topic }, () => handler(messages));
  };
}

/**
 * One stream of messages on the queue: its name, the partition key of a message (messages
 * of one key stay in order, in one partition or lane), and the schema that a message read
 * back from Kafka must satisfy (a message that does not goes to the dead-letter topic).
 *
 * Schemas check the shape of a message as JSON.parse returns it and transform nothing: a
 * message that passes is used as read.
 */
export interface Topic<T> {
  readonly name: string;
  key(message: T): string;
  readonly schema: z.ZodType<T>;
  /**
   * A faster check that accepts exactly the values `schema` accepts, for topics on the hot
   * path; tested to agree with the schema.
   */
  readonly accepts?: (value: unknown) => value is T;
  /**
   * What a reader waits on (a project): `ReadYourWrites.stored` for some scopes waits only
   * for the messages of those scopes (and what precedes them in the queue).
   */
  readonly readScope?: (message: T) => string;
  /**
   * How many stored items (calls, spans, log records) a message brings; 1 when absent. The
   * durable log's lag bound tells bulk writes by it (queue/lagBound.ts).
   */
  readonly items?: (message: T) => number;
}

export const deadLetterTopic = (topic: string): string => `${topic}.dead-letter`;

/** The message a parsed JSON value is (its bytes fields restored), or null when it is not of the topic's shape. */
export function messageFromJson<T>(topic: Topic<T>): (value: unknown) => T | null {
  const accepts = topic.accepts ?? ((value: unknown): value is T => topic.schema.safeParse(value).success);
  const bytes = bytesFieldsOf(topic.schema);
  return (value) => {
    restoreBytes(value, bytes);
    return accepts(value) ? value : null;
  };
}

/** A message as JSON text (bytes fields in base64), as `messageFromJson` reads it back once parsed. */
export function messageWriter<T>(topic: Topic<T>): (message: T) => string {
  const bytes = bytesFieldsOf(topic.schema);
  return (message) => JSON.stringify(toJsonValue(message, bytes));
}
