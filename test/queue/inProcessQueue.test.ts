import { describe, expect, it } from "vitest";
import { QueueFullError, RetryableError } from "../../services/errors.js";
import { traceEventsTopic, type CallUpdateEvent, type TraceEvent } from "../../services/queue/events.js";
import { InProcessQueue } from "../../services/queue/inProcessQueue.js";
import { StoreUnavailableError } from "../../services/errors.js";

const topic = traceEventsTopic("events");
const update = (id: string, n = 0): CallUpdateEvent => ({ kind: "call_update", project_id: "acme/q", id, display_name: `v${n}`, updated_at: n });

describe("the embedded group-commit queue", () => {
  it("answers a publisher only after its events were handled, and shares one write between concurrent publishers", async () => {
    const queue = new InProcessQueue(topic, { maxPendingEvents: 100, maxBatchEvents: 100 });
    const batches: string[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await queue.start(async (events) => {
      batches.push(events.map((e) => (e as CallUpdateEvent).id));
      if (batches.length === 1) await gate;
    });
    let firstDone = false;
    const first = queue.publish([update("a")]).then(() => (firstDone = true));
    const second = queue.publish([update("b")]);
    const third = queue.publish([update("c")]);
    await new Promise((r) => setTimeout(r, 20));
    expect(firstDone).toBe(false);
    release();
    await Promise.all([first, second, third]);
    expect(batches).toEqual([["a"], ["b", "c"]]);
  });

  it("refuses at once with QueueFullError beyond its bound", async () => {
    const queue = new InProcessQueue(topic, { maxPendingEvents: 3, maxBatchEvents: 10 });
    const pending = queue.publish([update("a"), update("b")]);
    await expect(queue.publish([update("c"), update("d")])).rejects.toBeInstanceOf(QueueFullError);
    await queue.start(async () => {});
    await pending;
  });

  it("bounds the bytes of the requests waiting, admits a lone request of any size, and frees room once written", async () => {
    const queue = new InProcessQueue(topic, { maxPendingEvents: 1000, maxPendingBytes: 1000, maxBatchEvents: 10 });
    const big = queue.publish([update("big")], 5000); // alone: admitted although over the bound
    await expect(queue.publish([update("small")], 10)).rejects.toBeInstanceOf(QueueFullError);
    await queue.start(async () => {});
    await big;
    const a = queue.publish([update("a")], 600);
    await expect(queue.publish([update("b")], 600)).rejects.toBeInstanceOf(QueueFullError);
    const c = queue.publish([update("c")], 400);
    await Promise.all([a, c]);
    await queue.publish([update("d")], 1000);
  });

  it("keeps the parts of one call in order across lanes", async () => {
    const queue = new InProcessQueue(topic, { maxPendingEvents: 1000, maxBatchEvents: 7, lanes: 3 });
    const seen = new Map<string, number[]>();
    await queue.start(async (events: readonly TraceEvent[]) => {
      for (const e of events as CallUpdateEvent[]) seen.set(e.id, [...(seen.get(e.id) ?? []), e.updated_at]);
      await new Promise((r) => setTimeout(r, 1));
    });
    const sends = [];
    for (let n = 0; n < 20; n++) sends.push(queue.publish(["x", "y", "z", "w"].map((id) => update(id, n))));
    await Promise.all(sends);
    for (const id of ["x", "y", "z", "w"]) expect(seen.get(id)).toEqual(Array.from({ length: 20 }, (_, n) => n));
  });

  it("refuses only the request whose events broke a shared write", async () => {
    const queue = new InProcessQueue(topic, { maxPendingEvents: 100, maxBatchEvents: 100 });
    let calls = 0;
    const blocker = queue.publish([update("first")]);
    const good = queue.publish([update("good")]);
    const bad = queue.publish([update("bad")]);
    await queue.start(async (events) => {
      calls++;
      if (events.some((e) => (e as CallUpdateEvent).id === "bad")) throw new Error("type mismatch");
    });
    await blocker;
    await good;
    await expect(bad).rejects.toThrow("type mismatch");
    expect(calls).toBeGreaterThan(2);
  });

  it("turns a store outage into a retryable refusal, and drains on shutdown", async () => {
    const queue = new InProcessQueue(topic, { maxPendingEvents: 100, maxBatchEvents: 100 });
    let down = true;
    const handled: string[] = [];
    await queue.start(async (events) => {
      if (down) throw new StoreUnavailableError("refused");
      handled.push(...events.map((e) => (e as CallUpdateEvent).id));
    });
    await expect(queue.publish([update("lost")])).rejects.toBeInstanceOf(RetryableError);
    down = false;
    const kept = queue.publish([update("kept")]);
    await queue.shutdown();
    await kept;
    expect(handled).toEqual(["kept"]);
    await expect(queue.publish([update("late")])).rejects.toBeInstanceOf(RetryableError);
  });
});
