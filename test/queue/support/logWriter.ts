/**
 * Publishes to a durable log until killed, from several concurrent writers, and prints the
 * id of every acknowledged event (one line each, after its publish resolved). Its consumer
 * never stores anything (the store is "down"), so nothing is committed. Used by
 * test/queue/durableLogQueue.test.ts, which kills it with SIGKILL mid-load.
 */
import pino from "pino";
import { DurableLogQueue } from "../../../services/queue/durableLog/durableLogQueue.js";
import { traceEventsTopic, type CallUpdateEvent } from "../../../services/queue/events.js";

const dir = process.argv[2]!;
const queue = await DurableLogQueue.open(traceEventsTopic("events"), {
  dir,
  maxLogBytes: 1 << 30,
  maxPendingEvents: 100_000,
  maxPendingBytes: 1 << 26,
  maxBatchEvents: 100,
  maxBatchBytes: 1 << 20,
  maxWaitMs: 5,
  segmentBytes: 4096,
  log: pino({ level: "silent" }),
});
await queue.start(async () => false); // the store is "down": nothing is ever delivered
const update = (id: string): CallUpdateEvent => ({ kind: "call_update", project_id: "acme/crash", id, display_name: "x".repeat(40), updated_at: 1 });
await Promise.all(
  Array.from({ length: 4 }, async (_, w) => {
    for (let n = 0; ; n++) {
      const ids = Array.from({ length: 1 + (n % 5) }, (_, i) => `w${w}-${n}-${i}`);
      await queue.publish(ids.map(update));
      process.stdout.write(ids.map((id) => `${id}\n`).join(""));
    }
  }),
);
