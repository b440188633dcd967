import { batchDuration, batchEvents, timed } from "../metrics.js";

/**
 * The queue between the stages: ingest → worker for call events (topic `traceEventsTopic`),
 * submitters → job runners for jobs (`jobsTopic`). One interface per side, generic over the
 * message type of a topic (queue/topic.ts).
 *
 * `publish` resolves only once the messages are durable: acknowledged by Kafka (acks=all),
 * or, in the embedded queue, handled by the consumer (for call events: written to
 * ClickHouse). It rejects with QueueFullError when bounded buffers are full and
 * RetryableError when the messages could not be made durable. `weightBytes` is the size of
 * the request the messages came from: it counts toward the memory bound.
 */
export interface EventPublisher<T> {
  publish(messages: readonly T[], weightBytes?: number): Promise<void>;
  healthy(): Promise<boolean>;
  close(): Promise<void>;
}

/** Handles one batch; it must throw unless every message of the batch is handled (stored). */
export type BatchHandler<T> = (messages: readonly T[]) => Promise<void>;

/**
 * The consuming side. `start` begins delivering batches to the handler; offsets (or
 * waiting publishers) are released only after the handler resolved. `shutdown` stops
 * intake, lets the in-flight batch finish and commits.
 */
export interface EventConsumer<T> {
  start(handler: BatchHandler<T>): Promise<void>;
  shutdown(): Promise<void>;
}

/** `handler` with its batches counted and timed (`worker_batch_events`, `worker_batch_seconds`) under the topic's name. */
export function measuredBatches<T>(topic: string, handler: BatchHandler<T>): BatchHandler<T> {
  return async (messages) => {
    batchEvents.observe({ topic }, messages.length);
    await timed(batchDuration, { topic }, () => handler(messages));
  };
}
