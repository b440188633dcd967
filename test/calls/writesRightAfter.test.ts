/**
 * Writes that refer to a call sent right after it, before the worker stored it, on the
 * default mode (the durable log answers once a write is durable and stores it a moment
 * later): each applies as if the call had been stored first, and a read that follows at once
 * sees it (the service holds an operation on a project until that project's queued writes
 * are stored). Requests go out as soon as the last one is answered, as an SDK sends them.
 */
import { describe, expect, it } from "vitest";
import { client, iso, KEY_ACME, serviceForFile, waitStored } from "../support/service.js";

const service = serviceForFile();
const T0 = Date.UTC(2026, 10, 27, 9);

interface Call {
  id: string;
  display_name: string | null;
  summary: { weave: { feedback?: { payload: unknown }[] } };
}
interface Thread {
  thread_id: string;
  turn_count: number;
  start_time: string;
  first_turn_id: string;
  last_turn_id: string;
}

const start = (project: string, id: string, i: number, more: Record<string, unknown> = {}) => ({
  mode: "start",
  req: { start: { project_id: project, id, op_name: "op", trace_id: `tr-${project}`, parent_id: null, started_at: iso(T0 + i * 1000), attributes: {}, inputs: {}, ...more } },
});
const end = (project: string, id: string, i: number) => ({ mode: "end", req: { end: { project_id: project, id, ended_at: iso(T0 + i * 1000 + 500), output: null, summary: {} } } });

const eager = () => client(service.url);
async function ok(res: Promise<Response>): Promise<unknown> {
  const answer = await res;
  expect(answer.status, await answer.clone().text()).toBe(200);
  return answer.json();
}
async function readIds(project: string): Promise<string[]> {
  return (await service.api.lines<Call>("/calls/stream_query", { project_id: project, sort_by: [{ field: "started_at", direction: "asc" }] })).map((c) => c.id);
}

describe("a delete sent right after the calls it names", () => {
  it("deletes them and every descendant, and num_deleted counts the ids asked for", async () => {
    const P = "acme/delete-right-after";
    const api = eager();
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "root", 0), start(P, "a", 1, { parent_id: "root" }), start(P, "a1", 2, { parent_id: "a" }), start(P, "b", 3, { parent_id: "root" })] }));
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "a1x", 4, { parent_id: "a1" })] }));
    expect(await ok(api.post("/calls/delete", { project_id: P, call_ids: ["a", "a"] }))).toEqual({ num_deleted: 1 });
    expect(await readIds(P)).toEqual(["root", "b"]);
    expect(await service.api.json("/calls/query_stats", { project_id: P })).toEqual({ count: 2 });
  });

  it("keeps a child that arrives after its parent was deleted out of every read", async () => {
    const P = "acme/delete-then-child";
    const api = eager();
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "parent", 0), start(P, "other", 1)] }));
    await ok(api.post("/calls/delete", { project_id: P, call_ids: ["parent"] }));
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "late-child", 2, { parent_id: "parent" })] }));
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "late-grandchild", 3, { parent_id: "late-child" })] }));
    expect(await readIds(P)).toEqual(["other"]);
  });

  it("hides a call whose delete came before it", async () => {
    const P = "acme/delete-before-call";
    const api = eager();
    await ok(api.post("/calls/delete", { project_id: P, call_ids: ["early"] }));
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "early", 0), start(P, "early-child", 1, { parent_id: "early" }), start(P, "kept", 2)] }));
    expect(await readIds(P)).toEqual(["kept"]);
  });
});

describe("a thread whose turn is deleted right after it was written", () => {
  it("never keeps that turn: count, start time and first turn come from the turns left", async () => {
    const P = "acme/thread-delete-right-after";
    const api = eager();
    const turn = (id: string, i: number) => start(P, id, i, { thread_id: "th", turn_id: id });
    await ok(api.post("/call/upsert_batch", { batch: [turn("t0", 0), end(P, "t0", 0), turn("t1", 1), end(P, "t1", 1), turn("t2", 2), end(P, "t2", 2)] }));
    await ok(api.post("/calls/delete", { project_id: P, call_ids: ["t0"] }));
    const threads = await service.api.lines<Thread>("/threads/stream_query", { project_id: P });
    expect(threads).toHaveLength(1);
    expect(threads[0]).toMatchObject({ thread_id: "th", turn_count: 2, first_turn_id: "t1", last_turn_id: "t2" });
    expect(Date.parse(threads[0]!.start_time)).toBe(T0 + 1000);
  });
});

describe("an update or feedback sent right after the call", () => {
  it("applies the update", async () => {
    const P = "acme/update-right-after";
    const api = eager();
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "u", 0), end(P, "u", 0)] }));
    await ok(api.post("/call/update", { project_id: P, call_id: "u", display_name: "renamed" }));
    const { call } = await service.api.json<{ call: Call }>("/call/read", { project_id: P, id: "u" });
    expect(call.display_name).toBe("renamed");
  });

  it("attaches the feedback to the call", async () => {
    const P = "acme/feedback-right-after";
    const api = eager();
    await ok(api.post("/call/upsert_batch", { batch: [start(P, "f", 0), end(P, "f", 0)] }));
    await ok(api.post("/feedback/create", { project_id: P, weave_ref: `weave:///${P}/call/f`, feedback_type: "wandb.reaction.1", payload: { emoji: "👍" } }));
    const [call] = await service.api.lines<Call>("/calls/stream_query", { project_id: P, include_feedback: true });
    expect(call!.summary.weave.feedback?.map((f) => f.payload)).toEqual([{ emoji: "👍", detoned: "👍" }]);
  });
});

describe("the barrier, GET /queue/stored", () => {
  it("answers {stored: true} once every acknowledged write is stored, also of another project; 401 without a key", async () => {
    const P = "acme/barrier";
    await ok(eager().post("/call/upsert_batch", { batch: Array.from({ length: 50 }, (_, i) => start(P, `b${i}`, i)) }));
    const res = await fetch(`${service.url}/queue/stored?timeout_ms=20000`, { headers: { authorization: `Basic ${Buffer.from(`api:${KEY_ACME}`).toString("base64")}` } });
    expect([res.status, await res.json()]).toEqual([200, { stored: true }]);
    expect((await fetch(`${service.url}/queue/stored`)).status).toBe(401);
    await waitStored(service.url);
  });
});
