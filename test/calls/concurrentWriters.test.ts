import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallEndEvent, CallStartEvent } from "../../services/queue/events.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { CallBatchWriter } from "../../services/worker/callBatchWriter.js";
import { freshStore } from "../support/database.js";

const T0 = Date.UTC(2026, 10, 1) * 1000;
let store: ClickHouseStore;
beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => store.close());

const P = "acme/race";
const start = (id: string, i: number): CallStartEvent => ({
  kind: "call_start", project_id: P, id, trace_id: `tr-${id}`, parent_id: null, thread_id: null, turn_id: null, op_name: "op",
  display_name: null, started_at: T0 + i, attributes: {}, inputs: { i }, otel_dump: null, wb_user_id: "alice", wb_run_id: null, wb_run_step: null,
});
const end = (id: string, i: number): CallEndEvent => ({
  kind: "call_end", project_id: P, id, ended_at: T0 + i + 1000, exception: null, output: { i }, summary: {}, wb_run_step_end: null,
});

describe("lookups by id", () => {
  it("stay under ClickHouse's max_query_size for a batch of thousands of long ids", async () => {
    const writer = new CallBatchWriter(new CallsWriteRepository(store));
    const ids = Array.from({ length: 2500 }, (_, i) => `${"x".repeat(200)}-${i}`);
    const inProject = <T extends object>(e: T) => ({ ...e, project_id: "acme/long-ids" });
    await writer.write(ids.map((id, i) => inProject(start(id, i))));
    // Ends without their starts in the batch: each call is looked up by id (2500 ids of 200+ characters).
    await writer.write(ids.map((id, i) => inProject(end(id, i))));
    const [row] = await store.rows<{ n: string }>("test_long_ids", {
      sql: "SELECT count() AS n FROM calls FINAL WHERE project_id = 'acme/long-ids' AND ended_at IS NOT NULL",
      params: {},
    });
    expect(Number(row!.n)).toBe(2500);
  });
});

describe("two writers at once (two processes of a cluster)", () => {
  it("never loses an end whose start is written by the other writer at the same moment", async () => {
    const a = new CallBatchWriter(new CallsWriteRepository(store));
    const b = new CallBatchWriter(new CallsWriteRepository(store));
    const rounds = 40;
    for (let r = 0; r < rounds; r++) {
      const ids = Array.from({ length: 5 }, (_, k) => `c${r}-${k}`);
      // Starts go to one writer, ends to the other, both batches written concurrently;
      // a short random delay shifts one side so every interleaving of their steps occurs.
      const delay = (Math.random() * 30) | 0;
      const sleep = () => new Promise((done) => setTimeout(done, delay));
      const [starts, ends] = r % 2 === 0 ? [a, b] : [b, a];
      await Promise.all([
        (r % 4 < 2 ? sleep() : Promise.resolve()).then(() => starts.write(ids.map((id, k) => start(id, r * 10 + k)))),
        (r % 4 >= 2 ? sleep() : Promise.resolve()).then(() => ends.write(ids.map((id, k) => end(id, r * 10 + k)))),
      ]);
    }
    const rows = await store.rows<{ id: string; ended_at: string | null; output: string | null }>("test_race", {
      sql: "SELECT id, ended_at, output FROM calls FINAL WHERE project_id = {pb_0:String} ORDER BY id",
      params: { pb_0: { type: "String", value: P } },
    });
    expect(rows).toHaveLength(rounds * 5);
    const unfinished = rows.filter((row) => row.ended_at === null).map((row) => row.id);
    expect(unfinished).toEqual([]);
    for (const row of rows) expect(JSON.parse(row.output!)).toEqual({ i: Number(row.ended_at) - T0 - 1000 });
  });
});
