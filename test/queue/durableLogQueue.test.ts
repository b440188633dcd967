import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { afterAll, describe, expect, it, vi } from "vitest";
import { QueueFullError, RetryableError, StoreUnavailableError } from "../../services/errors.js";
import { DurableLogQueue, type DurableLogOptions } from "../../services/queue/durableLog/durableLogQueue.js";
import { LogInUseError } from "../../services/queue/durableLog/storage/lock.js";
import { SegmentedLog } from "../../services/queue/durableLog/storage/segmentedLog.js";
import { traceEventsTopic, type CallUpdateEvent, type TraceEvent } from "../../services/queue/events.js";
import { delivering } from "../support/delivery.js";
import { sleep, until as pollUntil } from "../support/polling.js";

const topic = traceEventsTopic("events");
const root = mkdtempSync(join(tmpdir(), "log-queue-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => join(root, `q${dirs++}`);

const update = (id: string, n = 0): CallUpdateEvent => ({ kind: "call_update", project_id: "acme/q", id, display_name: `v${n}`, updated_at: n });
const ids = (events: readonly TraceEvent[]) => events.map((e) => (e as CallUpdateEvent).id);

function open(dir: string, options: Partial<DurableLogOptions> = {}) {
  return DurableLogQueue.open(topic, {
    dir,
    maxLogBytes: 1 << 20,
    maxPendingEvents: 10_000,
    maxPendingBytes: 1 << 20,
    maxBatchEvents: 100,
    maxBatchBytes: 1 << 20,
    maxWaitMs: 1,
    log: pino({ level: "silent" }),
    ...options,
  });
}

/** A handler that records what it stored, and can be held closed or made to fail. */
function store() {
  const batches: string[][] = [];
  let gate: Promise<void> = Promise.resolve();
  let open: () => void = () => {};
  let failing: ((events: readonly TraceEvent[]) => Error | null) | null = null;
  return {
    batches,
    stored: () => batches.flat(),
    hold: () => (gate = new Promise((r) => (open = r))),
    release: () => open(),
    failWith: (f: typeof failing) => (failing = f),
    handler: async (events: readonly TraceEvent[]) => {
      await gate;
      const err = failing?.(events);
      if (err) throw err;
      batches.push(ids(events));
    },
  };
}

const until = (check: () => boolean | Promise<boolean>): Promise<true> => pollUntil(check, { everyMs: 5 });

describe("the durable log queue", () => {
  it("answers a publisher once its record is synced, before the worker stored it, and shares one sync between concurrent publishers", async () => {
    const queue = await open(freshDir());
    const s = store();
    s.hold();
    await queue.start(delivering(s.handler));
    const appends = vi.spyOn(SegmentedLog.prototype, "append");
    await Promise.all(Array.from({ length: 40 }, (_, i) => queue.publish([update(`p${i}`)])));
    expect(s.stored()).toEqual([]);
    expect(appends.mock.calls.length).toBeLessThan(40);
    appends.mockRestore();
    s.release();
    await until(() => s.stored().length === 40);
    expect(s.stored()).toEqual(Array.from({ length: 40 }, (_, i) => `p${i}`));
    await queue.shutdown();
  });

  it("hands records over whole and in order, in batches of at most maxBatchEvents events", async () => {
    const queue = await open(freshDir(), { maxBatchEvents: 5, maxWaitMs: 60_000 });
    const s = store();
    s.hold();
    await queue.start(delivering(s.handler));
    const sent: string[] = [];
    for (let r = 0; r < 12; r++) {
      const record = Array.from({ length: 1 + (r % 3) }, (_, i) => `r${r}-${i}`);
      sent.push(...record);
      await queue.publish(record.map((id) => update(id)));
    }
    s.release();
    await until(() => s.stored().length >= 20);
    await queue.shutdown();
    expect(s.stored()).toEqual(sent);
    expect(s.batches.every((b) => b.length <= 5)).toBe(true);
    // Whole records: a batch starts at a record's first event and ends at a record's last one.
    const lastOfRecord = (id: string) => Number(id.split("-")[1]) === Number(id.split("-")[0]!.slice(1)) % 3;
    expect(s.batches.every((b) => b[0]!.endsWith("-0") && lastOfRecord(b.at(-1)!))).toBe(true);
  });

  it("holds at most maxBatchBytes log bytes in a batch, and a bigger record alone", async () => {
    const queue = await open(freshDir(), { maxBatchEvents: 1000, maxBatchBytes: 600, maxWaitMs: 60_000 });
    const s = store();
    s.hold();
    await queue.start(delivering(s.handler));
    const sent: string[] = [];
    for (let r = 0; r < 12; r++) {
      // Records of ~100–1,000 bytes: several fit in a batch, the biggest fits in none.
      const record = Array.from({ length: r % 4 === 3 ? 8 : 1 }, (_, i) => `r${r}-${i}-${"x".repeat(60)}`);
      sent.push(...record);
      await queue.publish(record.map((id) => update(id)));
    }
    s.release();
    await until(() => s.stored().length >= sent.length);
    await queue.shutdown();
    expect(s.stored()).toEqual(sent);
    // A one-event record takes ~170 log bytes, an eight-event one ~1,250: at most three of
    // the first in a batch, and each of the second alone.
    const recordsOf = (batch: string[]) => new Set(batch.map((id) => id.split("-")[0])).size;
    for (const batch of s.batches) expect(batch.length === 8 ? recordsOf(batch) === 1 : batch.length <= 3).toBe(true);
    expect(s.batches.length).toBe(6);
  });

  it("sends a batch that is not full once its oldest record has waited maxWaitMs", async () => {
    const queue = await open(freshDir(), { maxBatchEvents: 1000, maxWaitMs: 30 });
    const s = store();
    await queue.start(delivering(s.handler));
    await queue.publish([update("lonely")]);
    await until(() => s.stored().length === 1);
    expect(s.batches).toEqual([["lonely"]]);
    await queue.shutdown();
  });

  it("hands a lone record over at once when no batch went out for maxWaitMs, and keeps batching the writes that follow", async () => {
    // Only the clock is moved: the consumer reads it to see how long it has been idle.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      const queue = await open(freshDir(), { maxBatchEvents: 1000, maxWaitMs: 60_000 });
      const s = store();
      await queue.start(delivering(s.handler));
      vi.setSystemTime(Date.now() + 61_000);
      await queue.publish([update("after-idle")]);
      await until(() => s.stored().length === 1);
      // Right after a batch, the next records wait for company: with the clock standing still,
      // maxWaitMs never passes, so none goes out however long the consumer runs meanwhile
      // (that a waiting batch goes out once it passed: "sends a batch that is not full" above).
      await queue.publish([update("follows")]);
      await queue.publish([update("later")]);
      await sleep(200);
      expect(s.stored()).toEqual(["after-idle"]);
      await queue.shutdown();
      expect(s.batches).toEqual([["after-idle"], ["follows", "later"]]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("keeps what the store has not taken across a restart, replays it once, and never replays what was committed", async () => {
    const dir = freshDir();
    const first = await open(dir);
    const s1 = store();
    await first.start(delivering(s1.handler));
    await first.publish([update("stored")]);
    await until(() => s1.stored().length === 1);
    s1.failWith(() => new StoreUnavailableError("down"));
    await first.publish([update("a"), update("b")]);
    await first.publish([update("c")]);
    await first.shutdown(); // the store fails: what is left stays in the log
    const second = await open(dir);
    const s2 = store();
    await second.start(delivering(s2.handler));
    await until(() => s2.stored().length >= 3);
    await second.shutdown();
    expect(s2.stored()).toEqual(["a", "b", "c"]);
  });

  it("retries a store outage until it is over, without losing or repeating a record", async () => {
    const queue = await open(freshDir());
    const s = store();
    let failures = 0;
    s.failWith(() => (++failures <= 2 ? new StoreUnavailableError("down") : null));
    await queue.start(delivering(s.handler));
    await queue.publish([update("x")]);
    await until(() => s.stored().length === 1);
    await queue.shutdown();
    expect(s.stored()).toEqual(["x"]);
    expect(failures).toBe(3);
  });

  it("refuses at once with QueueFullError when the log holds maxLogBytes not yet stored, and makes room once stored", async () => {
    const queue = await open(freshDir(), { maxLogBytes: 400 });
    const s = store();
    s.hold();
    await queue.start(delivering(s.handler));
    const big = `big-${"x".repeat(120)}`;
    await queue.publish([update(big, 1), update(big, 2), update(big, 3)]); // alone: admitted whatever its size
    const refused = await queue.publish([update("more")]).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(QueueFullError);
    expect((refused as QueueFullError).retryAfterSeconds).toBeGreaterThan(0);
    s.release();
    await until(() => s.stored().length === 3);
    await until(() => queue.publish([update("later")]).then(() => true, () => false));
    await queue.shutdown();
  });

  it("sets aside as dead letters only the messages the store refuses, and stores the rest", async () => {
    const dir = freshDir();
    const queue = await open(dir);
    const s = store();
    s.hold();
    s.failWith((events) => (ids(events).includes("bad") ? new Error("type mismatch") : null));
    await queue.start(delivering(s.handler));
    await queue.publish([update("one"), update("bad"), update("two")]);
    await queue.publish([update("three")]);
    s.release();
    await until(() => s.stored().length === 3);
    await queue.shutdown();
    expect(s.stored()).toEqual(["one", "two", "three"]);
    const dead = readFileSync(join(dir, "dead-letter.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l) as { error: string; message: CallUpdateEvent });
    expect(dead.map((d) => [d.message.id, d.error])).toEqual([["bad", "type mismatch"]]);
  });

  it("sets aside a record read back that is not JSON or not of the topic's shape, and hands over the rest", async () => {
    const dir = freshDir();
    const raw = await SegmentedLog.open(dir, { segmentBytes: 1 << 20 });
    await raw.append([Buffer.from(JSON.stringify([update("ok1")])), Buffer.from("{not json"), Buffer.from(JSON.stringify([{ kind: "call_update" }, update("ok2")]))]);
    await raw.close();
    const queue = await open(dir);
    const s = store();
    await queue.start(delivering(s.handler));
    await until(() => s.stored().length === 2);
    await queue.shutdown();
    expect(s.stored()).toEqual(["ok1", "ok2"]);
    const dead = readFileSync(join(dir, "dead-letter.jsonl"), "utf8").trim().split("\n").map((l) => (JSON.parse(l) as { message: unknown }).message);
    expect(dead).toEqual(["{not json", { kind: "call_update" }]);
  });

  it("reads records back from disk when more wait than it keeps in memory, in order and once each", async () => {
    const queue = await open(freshDir(), { maxCachedEvents: 3, maxBatchEvents: 4 });
    const s = store();
    s.hold();
    await queue.start(delivering(s.handler));
    const sent = Array.from({ length: 30 }, (_, i) => `m${i}`);
    for (const id of sent) await queue.publish([update(id)]);
    s.release();
    await until(() => s.stored().length >= 30);
    await queue.shutdown();
    expect(s.stored()).toEqual(sent);
  });

  it("hands over a record read back from disk that did not fit the last batch, though nothing more arrives", async () => {
    const queue = await open(freshDir(), { maxCachedEvents: 1, maxBatchEvents: 4, maxWaitMs: 60_000 });
    const s = store();
    s.hold();
    await queue.start(delivering(s.handler));
    await queue.publish([update("a0"), update("a1"), update("a2")]);
    await queue.publish([update("b0"), update("b1"), update("b2")]);
    s.release();
    await until(() => s.stored().length >= 6);
    await queue.shutdown();
    expect(s.batches).toEqual([["a0", "a1", "a2"], ["b0", "b1", "b2"]]);
  });

  it("drains on shutdown, then refuses new messages as retryable", async () => {
    const queue = await open(freshDir(), { maxWaitMs: 60_000, maxBatchEvents: 1000 });
    const s = store();
    await queue.start(delivering(s.handler));
    await queue.publish([update("waiting")]);
    await queue.shutdown();
    expect(s.stored()).toEqual(["waiting"]);
    await expect(queue.publish([update("late")])).rejects.toBeInstanceOf(RetryableError);
  });

  it("takes over the log another process left, and that directory is gone", async () => {
    const orphan = freshDir();
    const left = await open(orphan);
    await left.publish([update("o1"), update("o2")]);
    await left.shutdown(); // never started: everything stays
    const queue = await open(freshDir());
    expect(await queue.adopt(orphan)).toBe(1);
    expect(existsSync(orphan)).toBe(false);
    const s = store();
    await queue.start(delivering(s.handler));
    await queue.publish([update("own")]);
    await until(() => s.stored().length === 3);
    await queue.shutdown();
    expect(s.stored()).toEqual(["o1", "o2", "own"]);
  });

  it("cannot be opened twice on one directory", async () => {
    const dir = freshDir();
    const queue = await open(dir);
    await expect(open(dir)).rejects.toBeInstanceOf(LogInUseError);
    await queue.shutdown();
    await (await open(dir)).shutdown();
  });

  it("with two batches in flight, stores the next while one is held, takes no third, and commits positions only in order", async () => {
    const queue = await open(freshDir(), { batchesInFlight: 2, maxBatchEvents: 1 });
    const commits = vi.spyOn(DurableLogQueue.prototype, "commitStored");
    let releaseFirst: () => void = () => {};
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    const stored: string[] = [];
    await queue.start(delivering(async (events) => {
      if (ids(events)[0] === "a") await firstHeld;
      stored.push(...ids(events));
    }));
    for (const id of ["a", "b", "c"]) await queue.publish([update(id)]);
    await until(() => stored.includes("b"));
    await sleep(100);
    expect(stored).toEqual(["b"]);
    expect(commits).not.toHaveBeenCalled();
    releaseFirst();
    await until(() => commits.mock.calls.length === 3);
    expect(stored).toEqual(["b", "a", "c"]);
    const positions = commits.mock.calls.map(([position]) => position);
    expect(positions).toEqual([...positions].sort((x, y) => x - y));
    expect(new Set(positions).size).toBe(3);
    commits.mockRestore();
    await queue.shutdown();
  });

  it("with two batches in flight, keeps a batch stored past one that is not, and hands both over again after a restart", async () => {
    const dir = freshDir();
    const first = await open(dir, { batchesInFlight: 2, maxBatchEvents: 1, shutdownDrainMs: 50 });
    const s1 = store();
    s1.failWith((events) => (ids(events).includes("a") ? new StoreUnavailableError("down") : null));
    await first.start(delivering(s1.handler));
    await first.publish([update("a")]);
    await first.publish([update("b")]);
    await until(() => s1.stored().includes("b"));
    await first.shutdown();
    const second = await open(dir);
    const s2 = store();
    await second.start(delivering(s2.handler));
    await until(() => s2.stored().length >= 2);
    await second.shutdown();
    expect(s2.stored()).toEqual(["a", "b"]);
  });

  it("after a SIGKILL mid-load, hands over every acknowledged message exactly once, and each writer's messages as a prefix of what it sent", async () => {
    const dir = freshDir();
    const child = spawn(process.execPath, ["--import", "tsx", "test/queue/support/logWriter.ts", dir], { stdio: ["ignore", "pipe", "inherit"] });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((r) => child.once("exit", r));
    await until(() => output.split("\n").length > 2000 || child.exitCode !== null);
    child.kill("SIGKILL");
    await exited;
    const acked = output.split("\n").slice(0, -1); // the last line may be cut
    expect(acked.length).toBeGreaterThan(1000);
    expect(readdirSync(dir).filter((n) => n.endsWith(".log")).length).toBeGreaterThan(1);

    const queue = await open(dir, { maxBatchEvents: 500 });
    const s = store();
    await queue.start(delivering(s.handler));
    await queue.shutdown();
    const delivered = s.stored();
    expect(new Set(delivered).size).toBe(delivered.length);
    const seen = new Set(delivered);
    expect(acked.filter((id) => !seen.has(id))).toEqual([]);
    for (let w = 0; w < 4; w++) {
      const own = delivered.filter((id) => id.startsWith(`w${w}-`));
      const expected = [];
      for (let n = 0; expected.length < own.length; n++) for (let i = 0; i < 1 + (n % 5); i++) expected.push(`w${w}-${n}-${i}`);
      expect(own).toEqual(expected);
    }
  }, 60_000);
});
