import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StoreUnavailableError } from "../../services/errors.js";
import type { DurableLogOptions } from "../../services/queue/durableLog/durableLogQueue.js";
import { traceEventsTopic, type CallUpdateEvent, type TraceEvent } from "../../services/queue/events.js";
import { delivering, temporaryLog } from "../support/delivery.js";
import { untilRead } from "../support/polling.js";

/**
 * Small writes stored ahead of a backlog (queue/durableLog/admission/expressLane.ts), on a real log with
 * a handler that holds one project's writes (a worker busy with a bulk batch). What is checked:
 * which writes are stored while the bulk one waits, what a reader of each project waits for,
 * that each write is stored once, and that nothing is committed before it is stored.
 */
const topic = traceEventsTopic("events");
const root = mkdtempSync(join(tmpdir(), "express-lane-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;

const BULK_BYTES = 2_000;
const update = (project: string, id: string, name = id): CallUpdateEvent => ({ kind: "call_update", project_id: project, id, display_name: name, updated_at: 0 });
/** Bulk by its count (more than 4 items) and its size (more than BULK_BYTES). */
const bulk = (project: string, name: string) => Array.from({ length: 5 }, (_, i) => update(project, `${name}-${i}`, "x".repeat(BULK_BYTES)));
const ids = (events: readonly TraceEvent[]) => events.map((e) => (e as CallUpdateEvent).id);

/** No lag bound: only the size rule, which tells the small writes. */
const open = (dir: string, options: Partial<DurableLogOptions> = {}) =>
  temporaryLog(topic, { dir, maxBatchEvents: 1_000, maxWaitMs: 1, batchesInFlight: 2, lag: { maxLagMs: 0, bulkItems: 4, bulkBytes: BULK_BYTES }, ...options });

/** Stores every batch at once except those holding a bulk write's events, which wait until `release`. */
function worker() {
  const stored: string[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  return {
    stored,
    release: () => release(),
    handler: async (events: readonly TraceEvent[]) => {
      if (events.some((e) => (e as CallUpdateEvent).display_name.length >= BULK_BYTES)) await gate;
      stored.push(...ids(events));
    },
  };
}

const stateOf = (p: Promise<unknown>) => {
  const state = { settled: false };
  void p.then(() => (state.settled = true));
  return state;
};

describe("small writes behind a backlog", () => {
  it("are stored and readable while a bulk write before them waits; a reader of the bulk write's project still waits for it", async () => {
    const queue = await open(join(root, `q${dirs++}`));
    const w = worker();
    await queue.start(delivering(w.handler));
    await queue.publish(bulk("acme/bulk", "bulk"));
    await queue.publish([update("acme/live", "live-1")]);
    await queue.publish([update("acme/bulk", "bulk-small")]);
    await queue.stored(10_000, ["acme/live"]);
    await untilRead(async () => w.stored.includes("bulk-small"), Boolean, { everyMs: 5 });
    expect(w.stored).toEqual(["live-1", "bulk-small"]);
    // Its own small write is stored, but the project's bulk write is not: its reader waits.
    const bulkReader = stateOf(queue.stored(10_000, ["acme/bulk"]));
    const everything = stateOf(queue.stored(10_000));
    await new Promise((r) => setTimeout(r, 50));
    expect([bulkReader.settled, everything.settled]).toEqual([false, false]);
    w.release();
    await queue.stored(10_000, ["acme/bulk"]);
    await queue.stored(10_000);
    // Each write stored once: the in-order batches skipped what went ahead.
    expect(w.stored.sort()).toEqual(["bulk-small", "live-1", ...bulk("acme/bulk", "bulk").map((e) => (e as CallUpdateEvent).id)].sort());
    await queue.shutdown();
  });

  it("are committed only in order: after a stop with the bulk write before them unstored, both are handed over again", async () => {
    const dir = join(root, `q${dirs++}`);
    const queue = await open(dir, { shutdownDrainMs: 100 });
    const stored: string[] = [];
    await queue.start(
      delivering(async (events) => {
        if (events.some((e) => e.project_id === "acme/bulk")) throw new StoreUnavailableError("down for this project");
        stored.push(...ids(events));
      }),
    );
    await queue.publish(bulk("acme/bulk", "bulk"));
    await queue.publish([update("acme/live", "live-1")]);
    await queue.stored(10_000, ["acme/live"]);
    expect(stored).toEqual(["live-1"]);
    await queue.shutdown();

    const again = await open(dir);
    const replayed: string[] = [];
    await again.start(delivering(async (events) => void replayed.push(...ids(events))));
    await again.stored(10_000);
    expect(replayed).toEqual([...bulk("acme/bulk", "bulk").map((e) => (e as CallUpdateEvent).id), "live-1"]);
    await again.shutdown();
  });

  it("are stored in order, not ahead, when nothing waits before them", async () => {
    const queue = await open(join(root, `q${dirs++}`));
    const w = worker();
    w.release();
    await queue.start(delivering(w.handler));
    await queue.publish(bulk("acme/bulk", "bulk"));
    await queue.stored(10_000);
    await queue.publish([update("acme/live", "live-1")]);
    await queue.publish([update("acme/live", "live-2")]);
    await queue.stored(10_000);
    expect(w.stored).toEqual([...bulk("acme/bulk", "bulk").map((e) => (e as CallUpdateEvent).id), "live-1", "live-2"]);
    await queue.shutdown();
  });
});
