import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallCompleteEvent, CallEndEvent, CallPartEvent, CallStartEvent, CallUpdateEvent } from "../../services/queue/events.js";
import type { CallSnapshot } from "../../services/store/calls/callRows.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { CallBatchWriter } from "../../services/worker/callBatchWriter.js";
import { UNKNOWN_START_OP_NAME } from "../../services/worker/callMerge.js";
import { freshStore, optimizeFinal } from "../support/database.js";
import { callSnapshot } from "../support/callSnapshot.js";

/**
 * Complete calls and ends that name their start time (`started_at`, `trace_id`), through the
 * worker's merge and real ClickHouse: a complete call is one finished row, a lone end shows a
 * placeholder call at once, and whatever the order of arrival, the batching and redelivery,
 * every call ends the same.
 */
const T0 = Date.UTC(2026, 10, 21, 10) * 1000;
let store: ClickHouseStore;
let repo: CallsWriteRepository;
beforeAll(async () => {
  store = await freshStore();
  repo = new CallsWriteRepository(store);
});
afterAll(async () => store.close());

const start = (p: string, id: string): CallStartEvent => ({
  kind: "call_start", project_id: p, id, trace_id: "trace-1", parent_id: "root", thread_id: "th", turn_id: null, op_name: "weave:///acme/x/op/step:abc",
  display_name: "step", started_at: T0 + 123, attributes: { weave: { source: "python-sdk" } }, inputs: { q: id }, otel_dump: null, wb_user_id: "alice",
  wb_run_id: null, wb_run_step: null,
});
const end = (p: string, id: string, named = true): CallEndEvent => ({
  kind: "call_end", project_id: p, id, ended_at: T0 + 2_000_123, exception: null, output: { a: id }, summary: { usage: { m: { requests: 1 } } },
  wb_run_step_end: 4, ...(named ? { trace_id: "trace-1", started_at: T0 + 123 } : {}),
});
const update = (p: string, id: string): CallUpdateEvent => ({ kind: "call_update", project_id: p, id, display_name: "renamed", updated_at: T0 });
const complete = (p: string, id: string): CallCompleteEvent => {
  const { kind: _s, ...s } = start(p, id);
  const { kind: _e, trace_id: _t, started_at: _a, ...e } = end(p, id);
  return { kind: "call_complete", ...s, ...e };
};

const read = async (p: string, id: string): Promise<CallSnapshot | null> => (await repo.findSnapshots([{ project_id: p, id }])).get(`${p}/${id}`) ?? null;

/** Every stored version of the call (no FINAL): what a reader could ever have seen. */
const versions = (p: string, id: string) =>
  store.rows<{ ended_at: string | null; op_name: string }>("test_versions", {
    sql: "SELECT ended_at, op_name FROM calls WHERE project_id = {pb_0:String} AND id = {pb_1:String}",
    params: { pb_0: { type: "String", value: p }, pb_1: { type: "String", value: id } },
  });

/** The call's `call_index` row once ReplacingMergeTree kept one (the last written). */
async function indexRow(p: string, id: string): Promise<{ trace_id: string; parent_id: string | null }> {
  await optimizeFinal(store, "call_index");
  const [row] = await store.rows<{ trace_id: string; parent_id: string | null }>("test_index", {
    sql: "SELECT trace_id, parent_id FROM call_index FINAL WHERE project_id = {pb_0:String} AND id = {pb_1:String}",
    params: { pb_0: { type: "String", value: p }, pb_1: { type: "String", value: id } },
  });
  return row!;
}

const WHOLE: CallSnapshot = callSnapshot({
  project_id: "", id: "c", trace_id: "trace-1", parent_id: "root", thread_id: "th", op_name: "weave:///acme/x/op/step:abc",
  display_name: "renamed", started_at: T0 + 123, ended_at: T0 + 2_000_123, attributes: { weave: { source: "python-sdk" } },
  inputs: { q: "c" }, output: { a: "c" }, summary: { usage: { m: { requests: 1 } } }, wb_user_id: "alice", wb_run_step_end: 4,
});

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

describe("a complete call", () => {
  it("is written as one finished row: never a half call, even redelivered or after its start", async () => {
    const w = new CallBatchWriter(repo);
    await w.write([complete("acme/complete", "c")]);
    await w.write([complete("acme/complete", "c")]);
    expect(await read("acme/complete", "c")).toEqual({ ...WHOLE, project_id: "acme/complete", display_name: "step" });
    expect((await versions("acme/complete", "c")).every((v) => v.ended_at !== null)).toBe(true);
  });
});

describe("a start that comes after its parked end", () => {
  it("is written once, with the parked parts: the call is never seen running after its end came", async () => {
    const p = "acme/start-after-end";
    const w = new CallBatchWriter(repo);
    await w.write([end(p, "c", false), update(p, "c")]);
    await w.write([start(p, "c")]);
    expect((await versions(p, "c")).map((v) => ({ ...v, ended_at: Number(v.ended_at) }))).toEqual([{ ended_at: T0 + 2_000_123, op_name: WHOLE.op_name }]);
    expect(await read(p, "c")).toEqual({ ...WHOLE, project_id: p });
  });

  it("is merged with parts another writer parked (another process, a partition moved)", async () => {
    const p = "acme/start-elsewhere";
    await new CallBatchWriter(repo).write([end(p, "c", false), update(p, "c")]);
    await new CallBatchWriter(repo).write([start(p, "c")]);
    expect(await read(p, "c")).toEqual({ ...WHOLE, project_id: p });
  });
});

describe("an end that names its start time", () => {
  it("shows a finished placeholder call until the start comes, then the start fills it in", async () => {
    const p = "acme/placeholder";
    const w = new CallBatchWriter(repo);
    await w.write([end(p, "c")]);
    expect(await read(p, "c")).toEqual({
      project_id: p, id: "c", trace_id: "trace-1", parent_id: null, thread_id: null, turn_id: null, op_name: UNKNOWN_START_OP_NAME,
      display_name: null, started_at: T0 + 123, ended_at: T0 + 2_000_123, exception: null, attributes: {}, inputs: {}, output: { a: "c" },
      summary: { usage: { m: { requests: 1 } } }, otel_dump: null, wb_user_id: null, wb_run_id: null, wb_run_step: null, wb_run_step_end: 4,
      start_known: false,
    });
    await w.write([start(p, "c")]);
    expect(await read(p, "c")).toEqual({ ...WHOLE, project_id: p, display_name: "step" });
    expect(await indexRow(p, "c")).toEqual({ trace_id: "trace-1", parent_id: "root" });
  });

  it("takes its own id as the trace while the end names none", async () => {
    const p = "acme/no-trace";
    await new CallBatchWriter(repo).write([{ ...end(p, "c"), trace_id: null }]);
    expect(await read(p, "c")).toMatchObject({ trace_id: "c", start_known: false, ended_at: T0 + 2_000_123 });
  });

  it("stays parked and unseen without started_at, as before", async () => {
    const p = "acme/unnamed";
    await new CallBatchWriter(repo).write([end(p, "c", false)]);
    expect(await read(p, "c")).toBeNull();
  });

  it("gives the same call for every order of start, end and update, batched apart or together, and on redelivery", async () => {
    const parts = { S: start, E: end, U: update, C: complete } as const;
    const orders = [...permutations(["S", "E", "U"] as const), ...permutations(["C", "E", "U"] as const)];
    let n = 0;
    for (const order of orders) {
      for (const together of [false, true]) {
        const p = `acme/order-${n++}`;
        const w = new CallBatchWriter(repo);
        const events: CallPartEvent[] = order.map((k) => parts[k](p, "c"));
        const batches = together ? [events] : events.map((e) => [e]);
        for (const batch of batches) await w.write(batch);
        // Redelivery replays what follows the last committed offset: every suffix, in order.
        for (let from = batches.length - 1; from >= 0; from--) for (const batch of batches.slice(from)) await w.write(batch);
        // A client's retry of the end.
        await w.write([end(p, "c")]);
        const label = `${order.join("")} ${together ? "together" : "apart"}`;
        expect({ label, call: await read(p, "c") }).toEqual({ label, call: { ...WHOLE, project_id: p } });
        expect({ label, index: await indexRow(p, "c") }).toEqual({ label, index: { trace_id: "trace-1", parent_id: "root" } });
      }
    }
  });
});

describe("two writers at once (two processes of a cluster)", () => {
  it("merge a placeholder end with a start written at the same moment, and keep the start's index row", async () => {
    const p = "acme/race-placeholder";
    const a = new CallBatchWriter(new CallsWriteRepository(store));
    const b = new CallBatchWriter(new CallsWriteRepository(store));
    const rounds = 30;
    for (let r = 0; r < rounds; r++) {
      const ids = Array.from({ length: 4 }, (_, k) => `c${r}-${k}`);
      const delay = (Math.random() * 30) | 0;
      const sleep = () => new Promise((done) => setTimeout(done, delay));
      const [starts, ends] = r % 2 === 0 ? [a, b] : [b, a];
      await Promise.all([
        (r % 4 < 2 ? sleep() : Promise.resolve()).then(() => starts.write(ids.map((id) => start(p, id)))),
        (r % 4 >= 2 ? sleep() : Promise.resolve()).then(() => ends.write(ids.map((id) => end(p, id)))),
      ]);
    }
    const rows = await store.rows<{ id: string; ended_at: string | null; op_name: string }>("test_race_placeholder", {
      sql: "SELECT id, ended_at, op_name FROM calls FINAL WHERE project_id = {pb_0:String} ORDER BY id",
      params: { pb_0: { type: "String", value: p } },
    });
    expect(rows).toHaveLength(rounds * 4);
    expect(rows.filter((row) => row.ended_at === null || row.op_name !== WHOLE.op_name).map((row) => row.id)).toEqual([]);
    await optimizeFinal(store, "call_index");
    const orphanedIndex = await store.rows<{ id: string }>("test_race_index", {
      sql: "SELECT id FROM call_index FINAL WHERE project_id = {pb_0:String} AND parent_id IS NULL",
      params: { pb_0: { type: "String", value: p } },
    });
    expect(orphanedIndex).toEqual([]);
  });
});
