import type { Logger } from "pino";
import { RetryableError, errorText } from "../errors.js";
import { retryBackoffMs } from "../queue/backoff.js";
import { measuredBatches, type BatchHandler, type Deliver, type Delivery } from "../queue/queue.js";

/**
 * The worker's one delivery loop, the same for the durable log and for Kafka: the consumer
 * takes a batch and commits it once this resolves true; this stores it with `store`.
 * - A RetryableError (the store unavailable) is retried with capped backoff for as long as
 *   the consumer is live; once it is not, the batch is left uncommitted (false).
 * - Any other error is a refusal of some message of the batch: the batch is split in halves,
 *   each stored in order, until the message refused alone is found; it goes to the dead
 *   letters, logged, and the rest is stored.
 */
export function deliverWith<T>(store: BatchHandler<T>, log: Logger, topic: string): Deliver<T> {
  return (messages, delivery) => storeAll(store, messages, delivery, log, topic);
}

/** How a worker consumes a topic: the delivery loop over `handler`, its batches counted and timed under the topic's name (measuredBatches). */
export function measuredDelivery<T>(topic: string, handler: BatchHandler<T>, log: Logger): Deliver<T> {
  return deliverWith(measuredBatches(topic, handler), log, topic);
}

async function storeAll<T>(store: BatchHandler<T>, messages: readonly T[], delivery: Delivery<T>, log: Logger, topic: string): Promise<boolean> {
  if (messages.length === 0) return true;
  for (let attempt = 0; ; attempt++) {
    try {
      await store(messages);
      return true;
    } catch (err) {
      if (!(err instanceof RetryableError)) return split(store, messages, err, delivery, log, topic);
      if (!delivery.live()) return false;
      log.warn({ err: errorText(err), attempt, topic, events: messages.length }, "store unavailable, retrying batch");
      await delivery.pause(retryBackoffMs(attempt));
    }
  }
}

async function split<T>(store: BatchHandler<T>, messages: readonly T[], err: unknown, delivery: Delivery<T>, log: Logger, topic: string): Promise<boolean> {
  if (messages.length === 1) {
    await delivery.deadLetter(messages, errorText(err));
    log.error({ err: errorText(err), topic }, "a message refused by the store set aside as a dead letter");
    return true;
  }
  const half = messages.length >>> 1;
  return (await storeAll(store, messages.slice(0, half), delivery, log, topic)) && (await storeAll(store, messages.slice(half), delivery, log, topic));
}
