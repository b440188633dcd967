import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { QueueFullError, StoreUnavailableError } from "../../services/errors.js";
import { LagBound, type LagLimits } from "../../services/queue/lagBound.js";
import { traceEventsTopic, type CallUpdateEvent, type TraceEvent } from "../../services/queue/events.js";
import { delivering, temporaryLog } from "../support/delivery.js";
import { sleep, until as pollUntil } from "../support/polling.js";

/**
 * The durable log's lag bound (queue/lagBound.ts) on a real log, with a handler
 * that is held closed (a worker that is behind) or fails (a store that is down). No timing is
 * asserted: what is checked is which writes are admitted, held, refused and stored.
 */
const topic = traceEventsTopic("events");
const root = mkdtempSync(join(tmpdir(), "lag-bound-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

const update = (id: string): CallUpdateEvent => ({ kind: "call_update", project_id: "acme/lag", id, display_name: id, updated_at: 0 });
/** More items than `bulkItems` (4 here): bulk. */
const bulk = (name: string) => Array.from({ length: 5 }, (_, i) => update(`${name}-${i}`));
const ids = (events: readonly TraceEvent[]) => events.map((e) => (e as CallUpdateEvent).id);

function open(lag: Partial<LagLimits>, maxBatchEvents = 1_000) {
  return temporaryLog(topic, {
    dir: join(root, `q${dirs++}`),
    maxBatchEvents,
    maxWaitMs: 1,
    lag: { maxLagMs: 1, bulkItems: 4, bulkBytes: 1 << 20, holdMs: 60_000, stalledAfterMs: 60_000, ...lag },
  });
}

/** A handler held closed until `release`; `fail` makes it throw a store outage instead. */
function worker() {
  const stored: string[] = [];
  let open: () => void = () => {};
  const gate = new Promise<void>((r) => (open = r));
  let failing = false;
  return {
    stored,
    release: () => open(),
    fail: () => (failing = true),
    recover: () => (failing = false),
    handler: async (events: readonly TraceEvent[]) => {
      await gate;
      if (failing) throw new StoreUnavailableError("down");
      stored.push(...ids(events));
    },
  };
}

const until = (check: () => boolean): Promise<true> => pollUntil(check, { everyMs: 5 });

/** A handler that stores one batch per `step`, each step waiting until its batch is stored. */
function steppedWorker() {
  const stored: string[] = [];
  const gates: (() => void)[] = [];
  return {
    stored,
    handler: async (events: readonly TraceEvent[]) => {
      await new Promise<void>((release) => gates.push(release));
      stored.push(...ids(events));
    },
    step: async () => {
      await until(() => gates.length > 0);
      const before = stored.length;
      gates.shift()!();
      await until(() => stored.length > before);
    },
  };
}

const settledState = (p: Promise<unknown>) => {
  const state: { value: "pending" | "acknowledged" | unknown } = { value: "pending" };
  p.then(() => (state.value = "acknowledged"), (err: unknown) => (state.value = err));
  return state;
};

describe("the durable log's lag bound", () => {
  it("while the worker is behind, admits small writes at once and holds bulk ones until it caught up, then stores them in order", async () => {
    const queue = await open({});
    const w = worker();
    await queue.start(delivering(w.handler));
    await queue.publish([update("first")]);
    // The worker holds "first": let it age past the bound (1 ms).
    await sleep(20);
    const held = settledState(queue.publish(bulk("bulk")));
    await queue.publish([update("small")]);
    await queue.publish(bulk("small-batch").slice(0, 4));
    expect(held.value).toBe("pending");
    w.release();
    await until(() => held.value !== "pending");
    expect(held.value).toBe("acknowledged");
    await until(() => w.stored.length === 1 + 1 + 4 + 5);
    expect(w.stored.slice(0, 6)).toEqual(["first", "small", ...bulk("small-batch").slice(0, 4).map((e) => e.id)]);
    expect(w.stored.slice(6)).toEqual(bulk("bulk").map((e) => e.id));
    await queue.shutdown();
  });

  it("while the worker stores but is still past the bound, admits held bulk writes for a share of what it stores, before its backlog is stored", async () => {
    const queue = await open({}, 5);
    const w = steppedWorker();
    await queue.start(delivering(w.handler));
    const backlog = Array.from({ length: 50 }, (_, i) => `backlog-${i}`);
    for (const id of backlog) await queue.publish([update(id)]);
    // Every record of the backlog waits past the bound (1 ms), and stays past it until stored.
    await sleep(20);
    const held = settledState(queue.publish(bulk("bulk")));
    expect(held.value).toBe("pending");
    // Batches of 5 records; the write is admitted after a few, and acknowledged once synced.
    while (held.value === "pending" && w.stored.length < backlog.length) {
      await w.step();
      await sleep(20);
    }
    expect(held.value).toBe("acknowledged");
    expect(w.stored.length).toBeLessThan(backlog.length);
    while (w.stored.length < backlog.length + 5) await w.step();
    expect(w.stored).toEqual([...backlog, ...bulk("bulk").map((e) => e.id)]);
    await queue.shutdown();
  });

  it("refuses a bulk write with QueueFullError and a Retry-After once it waited holdMs, and stores nothing of it", async () => {
    const queue = await open({ holdMs: 50 });
    const w = worker();
    await queue.start(delivering(w.handler));
    await queue.publish([update("first")]);
    await sleep(20);
    const refused = await queue.publish(bulk("refused")).then(() => null, (err: unknown) => err);
    expect(refused).toBeInstanceOf(QueueFullError);
    expect((refused as QueueFullError).retryAfterSeconds).toBe(1);
    expect((refused as Error).message).toMatch(/behind/);
    w.release();
    await queue.publish([update("after")]);
    await until(() => w.stored.includes("after"));
    expect(w.stored).toEqual(["first", "after"]);
    await queue.shutdown();
  });

  it("tells a refused bulk writer to come back in a second, however far the worker is behind (it is held again then)", () => {
    const t0 = 1_000_000;
    const bound = new LagBound({ maxLagMs: 2_000, bulkItems: 50, bulkBytes: 1 << 20, stalledAfterMs: 60_000 }, 0, 100, t0);
    expect(bound.refusal(t0 + 1_000)).toBeNull();
    for (const behind of [2_500, 7_000, 40_000]) expect(bound.refusal(t0 + behind)?.retryAfterSeconds).toBe(1);
  });

  it("acknowledges bulk writes while the store is down (the worker stores nothing: stalled), and stores them once it is back", async () => {
    const queue = await open({ holdMs: 60_000, stalledAfterMs: 100 });
    const w = worker();
    w.fail();
    w.release();
    await queue.start(delivering(w.handler));
    await queue.publish([update("first")]);
    await sleep(20);
    // Held at first (the worker is behind), admitted once it counts as stalled.
    await queue.publish(bulk("down-1"));
    await queue.publish(bulk("down-2"));
    expect(w.stored).toEqual([]);
    // Back: the delivery loop's retry stores everything acknowledged, in order.
    w.recover();
    await until(() => w.stored.length === 11);
    expect(w.stored).toEqual(["first", ...bulk("down-1").map((e) => e.id), ...bulk("down-2").map((e) => e.id)]);
    await queue.shutdown();
  });
});
