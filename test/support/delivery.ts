import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { DurableLogQueue, type DurableLogOptions } from "../../services/queue/durableLog/durableLogQueue.js";
import type { BatchHandler, Deliver, Topic } from "../../services/queue/queue.js";
import { deliverWith } from "../../services/worker/delivery.js";

/** `handler` behind the worker's delivery (retries, splitting, dead letters), as the service starts its consumers. */
export const delivering = <T>(handler: BatchHandler<T>): Deliver<T> => deliverWith(handler, pino({ level: "silent" }), "test");

/** A durable log of `topic` in a fresh temporary directory (or `options.dir`), with small bounds. */
export function temporaryLog<T>(topic: Topic<T>, options: Partial<DurableLogOptions> = {}): Promise<DurableLogQueue<T>> {
  return DurableLogQueue.open(topic, {
    maxLogBytes: 1 << 24,
    maxPendingEvents: 10_000,
    maxPendingBytes: 1 << 24,
    maxBatchEvents: 100,
    maxBatchBytes: 1 << 20,
    maxWaitMs: 5,
    log: pino({ level: "silent" }),
    ...options,
    dir: options.dir ?? mkdtempSync(join(tmpdir(), "tracehouse-log-")),
  });
}
