import type { TraceEvent } from "./events.js";

/**
 * The queue between ingest and worker. `publish` resolves only once the events are
 * durable: acknowledged by Kafka (acks=all), or, in the embedded queue, processed by the
 * consumer (written to ClickHouse). It rejects with QueueFullError when bounded buffers are
 * full and RetryableError when the events could not be made durable. `weightBytes` is the
 * size of the request the events came from: it counts toward the memory bound.
 */
export interface EventPublisher {
  publish(events: readonly TraceEvent[], weightBytes?: number): Promise<void>;
  healthy(): Promise<boolean>;
  close(): Promise<void>;
}

/** Handles one batch; it must throw unless every event of the batch is stored. */
export type BatchHandler = (events: readonly TraceEvent[]) => Promise<void>;

/**
 * The consuming side. `start` begins delivering batches to the handler; offsets (or
 * waiting publishers) are released only after the handler resolved. `shutdown` stops
 * intake, lets the in-flight batch finish and commits.
 */
export interface EventConsumer {
  start(handler: BatchHandler): Promise<void>;
  shutdown(): Promise<void>;
}
