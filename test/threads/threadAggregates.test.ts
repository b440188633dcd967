import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallEndEvent, CallStartEvent, CallsDeleteEvent, CallEvent } from "../../services/queue/events.js";
import type { CallSnapshot } from "../../services/store/calls/callRows.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { toThreadView, type ThreadView } from "../../services/store/threads/threadRows.js";
import { ThreadsReadRepository } from "../../services/store/threads/threadsRead.js";
import { ThreadsWriteRepository } from "../../services/store/threads/threadsWrite.js";
import { CallBatchWriter } from "../../services/worker/callBatchWriter.js";
import { ThreadAggregatesWriter } from "../../services/worker/threadAggregates.js";
import { freshStore } from "../support/database.js";
import { ProjectRetention } from "../../services/store/projects/retention.js";
import { ProjectSettingsRepository } from "../../services/store/projects/settingsRepository.js";
import { callSnapshot } from "../support/callSnapshot.js";

const T0 = Date.UTC(2026, 10, 1) * 1000;
let store: ClickHouseStore;
let clockMs = Date.UTC(2026, 10, 1);
/** Every write happens a little later than the one before, as on one worker. */
const clock = () => (clockMs += 7);

beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => store.close());

function worker(): CallBatchWriter {
  return new CallBatchWriter(new CallsWriteRepository(store), [new ThreadAggregatesWriter(store, clock)]);
}

const start = (project: string, id: string, thread: string | null, turn: string | null, at: number, parent: string | null = null): CallStartEvent => ({
  kind: "call_start", project_id: project, id, trace_id: `tr-${turn ?? id}`, parent_id: parent, thread_id: thread, turn_id: turn, op_name: "op",
  display_name: null, started_at: at, attributes: {}, inputs: {}, otel_dump: null, wb_user_id: "alice", wb_run_id: null, wb_run_step: null,
});
const end = (project: string, id: string, at: number): CallEndEvent => ({
  kind: "call_end", project_id: project, id, ended_at: at, exception: null, output: null, summary: {}, wb_run_step_end: null,
});
const del = (project: string, ids: string[]): CallsDeleteEvent => ({ kind: "calls_delete", project_id: project, ids, deleted_at: T0, wb_user_id: "alice" });

async function threads(project: string): Promise<ThreadView[]> {
  const out: ThreadView[] = [];
  for await (const row of new ThreadsReadRepository(store, new ProjectRetention(new ProjectSettingsRepository(store), null)).stream({ projectId: project, sortBy: [{ field: "thread_id", direction: "asc" }] })) out.push(toThreadView(row));
  return out;
}

async function versions(project: string, thread: string): Promise<number[]> {
  const rows = await store.rows<{ version: string }>("test_versions", {
    sql: "SELECT version FROM threads WHERE project_id = {pb_0:String} AND thread_id = {pb_1:String} ORDER BY version",
    params: { pb_0: { type: "String", value: project }, pb_1: { type: "String", value: thread } },
  });
  return rows.map((r) => Number(r.version));
}

describe("thread aggregates kept by the worker", () => {
  it("counts a turn once across repeated and redelivered parts; a late bare start never hides the end", async () => {
    const P = "acme/redeliver";
    const w = worker();
    const batch: CallEvent[] = [start(P, "a", "th", "a", T0), start(P, "a-n", "th", "a", T0 + 5, "a")];
    await w.write(batch);
    await w.write(batch);
    await w.write([end(P, "a", T0 + 2_500_250), end(P, "a-n", T0 + 10)]);
    await w.write([end(P, "a", T0 + 2_500_250)]);
    await w.write([start(P, "a", "th", "a", T0)]);
    expect(await threads(P)).toEqual([{
      thread_id: "th", turn_count: 1, start_time: "2026-11-01T00:00:00.000000Z", last_updated: "2026-11-01T00:00:02.500250Z",
      first_turn_id: "a", last_turn_id: "a", p50_turn_duration_ms: 2500.25, p99_turn_duration_ms: 2500.25,
    }]);
  });

  it("lets the freshest computation win even when a stale one is inserted last", async () => {
    const P = "acme/versions";
    const w = worker();
    await w.write([start(P, "t1", "th", "t1", T0)]);
    const [stale] = await store.rows<Record<string, unknown>>("test_stale", {
      sql: "SELECT * FROM threads FINAL WHERE project_id = {pb_0:String}",
      params: { pb_0: { type: "String", value: P } },
    });
    await w.write([end(P, "t1", T0 + 1000)]);
    await w.write([start(P, "t2", "th", "t2", T0 + 5000)]);
    await w.write([del(P, ["t2"])]);
    const seen = await versions(P, "th");
    expect(seen).toHaveLength(4);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    expect(new Set(seen).size).toBe(4);
    // A slow worker's computation of the first state lands now: it must not win.
    await store.insert("test_stale_insert", "threads", [stale!]);
    expect(await threads(P)).toEqual([{
      thread_id: "th", turn_count: 1, start_time: "2026-11-01T00:00:00.000000Z", last_updated: "2026-11-01T00:00:00.001000Z",
      first_turn_id: "t1", last_turn_id: "t1", p50_turn_duration_ms: 1, p99_turn_duration_ms: 1,
    }]);
  });

  it("drops deleted turns from the figures, ignores deleted nested calls, and hides a thread with no turn left", async () => {
    const P = "acme/deleted";
    const w = worker();
    await w.write([
      start(P, "x1", "tx", "x1", T0), end(P, "x1", T0 + 4000),
      start(P, "x1-n", "tx", "x1", T0 + 1, "x1"), end(P, "x1-n", T0 + 2),
      start(P, "x2", "tx", "x2", T0 + 10_000), end(P, "x2", T0 + 11_000),
      start(P, "y1", "ty", "y1", T0 + 20_000),
    ]);
    await w.write([del(P, ["x1-n"])]);
    const [marks] = await store.rows<{ n: string }>("test_marks", {
      sql: "SELECT count() AS n FROM thread_turns WHERE project_id = {pb_0:String} AND deleted = 1",
      params: { pb_0: { type: "String", value: P } },
    });
    expect(Number(marks!.n)).toBe(0);
    expect((await threads(P)).map((t) => [t.thread_id, t.turn_count, t.p50_turn_duration_ms])).toEqual([["tx", 2, 4], ["ty", 1, null]]);
    await w.write([del(P, ["x2"]), del(P, ["y1"])]);
    expect(await threads(P)).toEqual([{
      thread_id: "tx", turn_count: 1, start_time: "2026-11-01T00:00:00.000000Z", last_updated: "2026-11-01T00:00:00.004000Z",
      first_turn_id: "x1", last_turn_id: "x1", p50_turn_duration_ms: 4, p99_turn_duration_ms: 4,
    }]);
    // A redelivered start of a deleted turn does not bring it back.
    await w.write([start(P, "y1", "ty", "y1", T0 + 20_000), end(P, "y1", T0 + 30_000)]);
    expect((await threads(P)).map((t) => t.thread_id)).toEqual(["tx"]);
  });

  it("gives the same figures when a project is rebuilt from its calls", async () => {
    const P = "acme/rebuild";
    const w = worker();
    const events: CallEvent[] = [];
    for (let t = 0; t < 5; t++) {
      for (let j = 0; j < 7; j++) {
        const id = `r${t}-${j}`;
        const at = T0 + t * 1_000_000 + j * 10_000;
        events.push(start(P, id, `th${t}`, id, at), start(P, `${id}-n`, `th${t}`, id, at + 1, id));
        if ((t + j) % 4 !== 0) events.push(end(P, id, at + 1 + ((t * 7919 + j * 104729) % 9000)));
      }
    }
    await w.write(events);
    await w.write([del(P, ["r1-3", "r2-0", "r4-6"])]);
    const before = await threads(P);
    expect(before).toHaveLength(5);
    await new ThreadsWriteRepository(store).rebuild(P, clock());
    expect(await threads(P)).toEqual(before);
  });

  it("keeps percentiles exact past 10,000 turns", async () => {
    const P = "acme/big";
    const n = 12_345;
    const snapshots: CallSnapshot[] = [];
    const durations: number[] = [];
    for (let i = 0; i < n + 3; i++) {
      const started = T0 + i * 1000;
      const duration = ((i * 2_654_435_761) % 9_999_991) + 1;
      const finished = i < n;
      if (finished) durations.push(duration / 1000);
      snapshots.push(callSnapshot({ project_id: P, id: `b${i}`, trace_id: `b${i}`, thread_id: "big", turn_id: `b${i}`, started_at: started, ended_at: finished ? started + duration : null }));
    }
    await new ThreadAggregatesWriter(store, clock).write(snapshots, []);
    durations.sort((a, b) => a - b);
    const [big] = await threads(P);
    expect(big).toMatchObject({
      turn_count: n + 3,
      p50_turn_duration_ms: durations[Math.floor(0.5 * n)],
      p99_turn_duration_ms: durations[Math.floor(0.99 * n)],
    });
  });
});
