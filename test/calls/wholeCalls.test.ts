import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CallSnapshot, WrittenCall } from "../../services/store/calls/callRows.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import { callKey, type CallCompleteEvent, type CallEndEvent, type CallKey, type CallUpdateEvent } from "../../services/queue/events.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { CallBatchWriter, type CallsDerivedWriter } from "../../services/worker/callBatchWriter.js";
import { freshStore } from "../support/database.js";
import type { JsonValue } from "../../services/json.js";

/**
 * Calls that come whole (an OTLP export's spans), written by `CallBatchWriter.writeWhole` with
 * each call's row made as soon as the call is, through real ClickHouse: the same stored call,
 * index row and follow-ups as `write` gives, parts parked before the call came merged into it,
 * and the cases `write` takes over (parts this writer parked, a call given twice).
 */
const T0 = Date.UTC(2026, 10, 30, 10) * 1000;
let store: ClickHouseStore;
let repo: CallsWriteRepository;
beforeAll(async () => {
  store = await freshStore();
  repo = new CallsWriteRepository(store);
});
afterAll(async () => store.close());

const complete = (p: string, id: string, output: JsonValue = { a: id }): CallCompleteEvent => ({
  kind: "call_complete", project_id: p, id, trace_id: "trace-1", parent_id: id === "root" ? null : "root", thread_id: "th", turn_id: id === "root" ? id : null,
  op_name: "chat gpt-4o", display_name: null, started_at: T0 + 123, attributes: { otel: { resource: { service: { name: "svc" } } } }, inputs: { q: id },
  otel_dump: { kind: "SPAN_KIND_CLIENT" }, wb_user_id: "alice", wb_run_id: null, wb_run_step: null, ended_at: T0 + 5_000, exception: null, output,
  summary: { usage: { m: { requests: 1 } } }, wb_run_step_end: null,
});
const end = (p: string, id: string): CallEndEvent => ({
  kind: "call_end", project_id: p, id, ended_at: T0 + 9_000, exception: null, output: { a: "parked" }, summary: {}, wb_run_step_end: null,
});
const update = (p: string, id: string): CallUpdateEvent => ({ kind: "call_update", project_id: p, id, display_name: "renamed", updated_at: T0 });

const read = async (p: string, id: string): Promise<CallSnapshot | null> => (await repo.findSnapshots([{ project_id: p, id }])).get(`${p}/${id}`) ?? null;

/** What a write handed to the derived writers (the thread aggregates, the projects). */
function followUps(): { writer: CallsDerivedWriter; calls: WrittenCall[]; deleted: CallKey[] } {
  const seen = { calls: [] as WrittenCall[], deleted: [] as CallKey[] };
  return { ...seen, writer: { write: async (calls, deleted) => void (seen.calls.push(...calls), seen.deleted.push(...deleted)) } };
}

/** `writeWhole` of these calls, `again` counting the keys it was asked for. */
async function writeWhole(writer: CallBatchWriter, calls: CallCompleteEvent[]): Promise<string[]> {
  const asked: string[] = [];
  await writer.writeWhole(calls.values(), calls.length, (keys) => {
    asked.push(...keys);
    return calls.filter((call) => keys.has(callKey(call)));
  });
  return asked;
}

const indexRows = (p: string) =>
  store.rows<{ id: string; trace_id: string; parent_id: string | null; started_at: string }>("test_whole_index", {
    sql: "SELECT id, trace_id, parent_id, started_at FROM call_index WHERE project_id = {pb_0:String} ORDER BY id",
    params: { pb_0: { type: "String", value: p } },
  });

describe("calls that come whole, written row by row", () => {
  it("are stored, indexed and followed up as `write` stores them", async () => {
    const [whole, merged] = ["acme/whole-rows", "acme/whole-merged"];
    const calls = (p: string) => ["root", "b", "a"].map((id) => complete(p, id));
    const byRows = followUps();
    const byMerge = followUps();
    expect(await writeWhole(new CallBatchWriter(repo, [byRows.writer]), calls(whole))).toEqual([]);
    await new CallBatchWriter(repo, [byMerge.writer]).write(calls(merged));
    for (const id of ["root", "a", "b"]) expect({ ...(await read(whole, id)), project_id: "" }).toEqual({ ...(await read(merged, id)), project_id: "" });
    expect((await indexRows(whole)).map((row) => ({ ...row }))).toEqual(await indexRows(merged));
    const scalars = (calls: readonly WrittenCall[]) =>
      calls.map(({ id, trace_id, parent_id, thread_id, turn_id, started_at, ended_at }) => ({ id, trace_id, parent_id, thread_id, turn_id, started_at, ended_at })).sort((x, y) => x.id.localeCompare(y.id));
    expect(scalars(byRows.calls)).toEqual(scalars(byMerge.calls));
  });

  it("take the parts another writer parked before they came", async () => {
    const p = "acme/whole-parked-elsewhere";
    await new CallBatchWriter(repo).write([end(p, "c"), update(p, "c")]);
    expect(await writeWhole(new CallBatchWriter(repo), [complete(p, "c"), complete(p, "d")])).toEqual([`${p}/c`]);
    expect(await read(p, "c")).toMatchObject({ display_name: "renamed", output: { a: "c" }, ended_at: T0 + 5_000 });
    expect(await read(p, "d")).toMatchObject({ display_name: null, output: { a: "d" } });
  });

  it("go through `write` when this writer parked parts of one of them, or one comes twice", async () => {
    const p = "acme/whole-by-write";
    const writer = new CallBatchWriter(repo);
    await writer.write([update(p, "c")]);
    expect((await writeWhole(writer, [complete(p, "c"), complete(p, "d")])).sort()).toEqual([`${p}/c`, `${p}/d`]);
    expect(await read(p, "c")).toMatchObject({ display_name: "renamed", output: { a: "c" } });
    expect((await writeWhole(writer, [complete(p, "e"), complete(p, "e", { a: "again" })])).sort()).toEqual([`${p}/e`]);
    expect(await read(p, "e")).toMatchObject({ output: { a: "again" } });
  });

  it("hand on a call deleted before it came as deleted", async () => {
    const p = "acme/whole-deleted";
    await new CallBatchWriter(repo).write([{ kind: "calls_delete", project_id: p, ids: ["c"], deleted_at: T0, wb_user_id: "alice" }]);
    const seen = followUps();
    await writeWhole(new CallBatchWriter(repo, [seen.writer]), [complete(p, "c"), complete(p, "d")]);
    expect(seen.deleted.map(callKey)).toEqual([`${p}/c`]);
    expect(seen.calls.map(callKey).sort()).toEqual([`${p}/c`, `${p}/d`]);
  });
});
