import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CallsWriteRepository, FEW_KEYED_ROWS, type KeyedTable } from "../../services/store/calls/callsWrite.js";
import { callKey, type CallEndEvent, type CallKey, type CallStartEvent, type CallsDeleteEvent } from "../../services/queue/events.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { CallBatchWriter } from "../../services/worker/callBatchWriter.js";
import { freshStore } from "../support/database.js";

/**
 * The worker looks up parked parts and deletions only for the calls a project may hold them
 * for: the ids of a project with few such rows are read whole, a project with many is looked
 * up by id. Through real ClickHouse and a fresh writer each time (nothing remembered in
 * memory), a part parked or a call deleted is found on both sides of that line (and the thread
 * aggregates told of a call deleted before it came), and the other calls of the project are
 * written as they came.
 */
const T0 = Date.UTC(2026, 10, 30, 10) * 1000;
/** More rows than a project's ids are read whole for. */
const MANY = FEW_KEYED_ROWS + 1;
let store: ClickHouseStore;
let repo: CallsWriteRepository;
beforeAll(async () => {
  store = await freshStore();
  repo = new CallsWriteRepository(store);
});
afterAll(async () => store.close());

const start = (p: string, id: string, parent: string | null = null): CallStartEvent => ({
  kind: "call_start", project_id: p, id, trace_id: "t", parent_id: parent, thread_id: null, turn_id: null, op_name: "op",
  display_name: null, started_at: T0, attributes: {}, inputs: { id }, otel_dump: null, wb_user_id: null, wb_run_id: null, wb_run_step: null,
});
const end = (p: string, id: string): CallEndEvent => ({
  kind: "call_end", project_id: p, id, ended_at: T0 + 1_000, exception: null, output: { done: id }, summary: {}, wb_run_step_end: null,
});
const remove = (p: string, id: string): CallsDeleteEvent => ({ kind: "calls_delete", project_id: p, ids: [id], deleted_at: T0 + 5, wb_user_id: "u" });

const stored = async (p: string, id: string) => (await repo.findSnapshots([{ project_id: p, id }])).get(`${p}/${id}`);
const deleted = async (p: string, ids: string[]) => [...(await repo.findDeletions(ids.map((id) => ({ project_id: p, id })))).keys()].sort();

/** `count` more rows of `table` in project `p`, for ids no call has. */
async function fill(table: KeyedTable, p: string, count: number): Promise<void> {
  const columns = table === "call_orphan_parts" ? "project_id, id, received_at, event" : "project_id, id, deleted_at, wb_user_id";
  await store.command("test_fill", {
    sql: `INSERT INTO ${table} (${columns}) SELECT {pb_0:String}, concat('filler-', toString(number)), 1, '' FROM system.numbers LIMIT ${count}`,
    params: { pb_0: { type: "String", value: p } },
  });
}

/** Each case on both sides of the line: a project with no other row, and one with MANY. */
const SIDES = [["few", 0], ["many", MANY]] as const;

describe.each(SIDES)("a project with %s rows of parked parts", (_, filler) => {
  it("adopts a parked end when its start comes to another writer, and writes its other calls as they came", async () => {
    const p = `acme/parked-${filler}`;
    await fill("call_orphan_parts", p, filler);
    await new CallBatchWriter(repo).write([end(p, "late-start")]);
    expect(await stored(p, "late-start")).toBeUndefined();
    await new CallBatchWriter(repo).write([start(p, "late-start"), start(p, "other")]);
    expect(await stored(p, "late-start")).toMatchObject({ ended_at: T0 + 1_000, output: { done: "late-start" } });
    expect(await stored(p, "other")).toMatchObject({ ended_at: null, output: null });
  });
});

describe.each(SIDES)("a project with %s deletions", (_, filler) => {
  it("deletes a call that comes after its own deletion or its parent's, and keeps the others", async () => {
    const p = `acme/deleted-${filler}`;
    await fill("call_deletions", p, filler);
    await new CallBatchWriter(repo).write([start(p, "parent"), remove(p, "parent"), remove(p, "early")]);
    const reported: string[] = [];
    const aggregates = { write: async (_calls: unknown, gone: readonly CallKey[]) => void reported.push(...gone.map(callKey)) };
    await new CallBatchWriter(repo, [aggregates]).write([start(p, "child", "parent"), start(p, "early"), start(p, "kept", "elsewhere")]);
    expect(await deleted(p, ["parent", "child", "early", "kept"])).toEqual([`${p}/child`, `${p}/early`, `${p}/parent`]);
    expect(reported.sort()).toEqual([`${p}/child`, `${p}/early`]);
  });
});
