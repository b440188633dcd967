/**
 * Backoff between attempts at something the store or the queue did not take (a batch to
 * store, a log read, a commit): doubling from 200 ms, at most 5 s. The worker's delivery
 * loop (worker/delivery.ts), the log's consumer and express lane (durableLog/) and the Kafka
 * consumer all wait so.
 */
export const retryBackoffMs = (attempt: number): number => Math.min(200 * 2 ** attempt, 5_000);
