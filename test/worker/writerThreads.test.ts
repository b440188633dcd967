/**
 * Writer threads of the log's consumer: started at the first batch that could go to them; a
 * batch handed over is stored in the thread and answered; an outage comes back as a RetryableError (the consumer retries the batch), a
 * refusal as a plain error (the consumer narrows it down to dead letters); a thread that dies
 * fails its batch as retryable and is started again, unless it keeps dying.
 */
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { RetryableError } from "../../services/errors.js";
import { metricsSnapshot, metricsText, type MetricsSnapshot } from "../../services/metrics.js";
import { withWriterThreads, writerThreads } from "../../services/worker/writerThreads.js";
import { untilRead } from "../support/polling.js";
import type { Scripted } from "./support/scriptedWriter.js";

const ENTRY = new URL("./support/scriptedWriter.ts", import.meta.url);
const writers = writerThreads<Scripted>(1, ENTRY, null, pino({ level: "silent" }));
const thread = writers.threads[0]!;
thread.start();
afterAll(() => writers.close());

async function untilIdle(writer = thread): Promise<void> {
  expect(await untilRead(() => writer.idle, Boolean, { timeoutMs: 20_000, everyMs: 20 })).toBe(true);
}

describe("writer threads", () => {
  it("start at the first batch handed over, which is stored here while they start; the next go to them", async () => {
    const lazy = writerThreads<Scripted>(1, ENTRY, null, pino({ level: "silent" }));
    try {
      const local: Scripted[][] = [];
      const handler = withWriterThreads(async (batch: readonly Scripted[]) => void local.push([...batch]), lazy.threads, (batch) => batch.every((m) => m.do === "store"));
      await handler([{ do: "hold" }]);
      expect(lazy.threads[0]!.idle).toBe(false); // not started by a batch it may not take
      await handler([{ do: "store" }]);
      expect(local).toEqual([[{ do: "hold" }], [{ do: "store" }]]);
      await untilIdle(lazy.threads[0]);
      await handler([{ do: "store" }, { do: "store" }]);
      expect(local).toHaveLength(2);
    } finally {
      await lazy.close();
    }
  });

  it("stores a batch in the thread, and is busy until it answered", async () => {
    await untilIdle();
    const writing = thread.write([{ do: "store" }, { do: "hold" }]);
    expect(thread.idle).toBe(false);
    await expect(thread.write([{ do: "store" }])).rejects.toBeInstanceOf(RetryableError);
    await writing;
    expect(thread.idle).toBe(true);
  });

  it("answers an outage as retryable, with its Retry-After, and a refusal as a plain error", async () => {
    await untilIdle();
    const outage = await thread.write([{ do: "outage" }]).catch((err: unknown) => err);
    expect(outage).toBeInstanceOf(RetryableError);
    expect(outage).toMatchObject({ message: "store unavailable", retryAfterSeconds: 4 });
    const refusal = await thread.write([{ do: "refuse" }]).catch((err: unknown) => err);
    expect(refusal).toBeInstanceOf(Error);
    expect(refusal).not.toBeInstanceOf(RetryableError);
    expect(refusal).toMatchObject({ message: "refused by the store" });
  });

  it("fails the batch of a thread that died as retryable, and starts the thread again", async () => {
    await untilIdle();
    const died = await thread.write([{ do: "die" }]).catch((err: unknown) => err);
    expect(died).toBeInstanceOf(RetryableError);
    expect(thread.idle).toBe(false);
    await untilIdle();
    await expect(thread.write([{ do: "store" }])).resolves.toBeUndefined();
  });

  it("passes its metrics on: the thread's own, added to this thread's snapshot and to /metrics", async () => {
    await untilIdle();
    const count = (text: string) => Number(/^worker_batch_events_count\{topic="scripted"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    const before = count((await metricsText()).text);
    await thread.write([{ do: "store" }, { do: "store" }]);
    await thread.write([{ do: "store" }]);
    expect(count((await metricsText()).text) - before).toBe(2);
    // The snapshot this thread would pass on (as the log's consumer thread does) holds the writer's counts.
    const scripted = (snapshot: MetricsSnapshot) =>
      snapshot.find((m) => m.name === "worker_batch_events")?.values.find((v) => "metricName" in v && v.metricName === "worker_batch_events_count" && v.labels.topic === "scripted")?.value;
    const inThread = scripted(await thread.metrics());
    expect(inThread).toBeGreaterThanOrEqual(2);
    expect(scripted(await metricsSnapshot())).toBe(inThread);
  });

  it("hands over only the batches it is told to, waiting while the thread is busy; the rest are stored here", async () => {
    await untilIdle();
    const count = (text: string) => Number(/^worker_batch_events_count\{topic="scripted"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    const before = count((await metricsText()).text);
    const local: Scripted[][] = [];
    const handler = withWriterThreads(async (batch: readonly Scripted[]) => void local.push([...batch]), writers.threads, (batch) => batch.every((m) => m.do === "hold"));
    const first = handler([{ do: "hold" }]);
    const second = handler([{ do: "hold" }]); // the thread is busy: waits for it
    await handler([{ do: "store" }]); // not to be handed over: stored here at once
    expect(local).toEqual([[{ do: "store" }]]);
    await Promise.all([first, second]);
    expect(local).toEqual([[{ do: "store" }]]);
    expect(count((await metricsText()).text) - before).toBe(2);
  });

  // Last: it leaves the thread down.
  it("stays down after ending again and again with no batch stored; the batches are then stored here", async () => {
    for (let end = 0; end < 4; end++) {
      await untilIdle();
      await expect(thread.write([{ do: "die" }])).rejects.toBeInstanceOf(RetryableError);
    }
    await new Promise((r) => setTimeout(r, 1_500)); // past the restart delay
    expect(thread.idle).toBe(false);
    const local: Scripted[][] = [];
    const handler = withWriterThreads(async (batch: readonly Scripted[]) => void local.push([...batch]), writers.threads, () => true);
    await handler([{ do: "store" }]);
    expect(local).toEqual([[{ do: "store" }]]);
  });
});
