import { beforeAll, describe, expect, it } from "vitest";
import { client, iso, KEY_OTHER, serviceForFile } from "../support/service.js";

type Feedback = Record<string, unknown> & { id: string; payload: Record<string, unknown> };
type Detail = { detail: { loc: (string | number)[]; msg: string; type: string }[] };

const service = serviceForFile();
const api = service.api;
const P = "acme/feedback";
const ref = (call: string, project = P) => `weave:///${project}/call/${call}`;
const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_MICROS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/;


const create = (body: Record<string, unknown>) => api.json<Feedback>("/feedback/create", { project_id: P, ...body });
const query = (body: Record<string, unknown>, project = P) => api.json<{ result: Feedback[] }>("/feedback/query", { project_id: project, ...body }).then((r) => r.result);
const byRef = (weaveRef: string) => ({ $expr: { $eq: [{ $getField: "weave_ref" }, { $literal: weaveRef }] } });
const ids = (list: { id: string }[]) => list.map((f) => f.id);

describe("create", () => {
  it("answers {id, created_at, wb_user_id, payload} with a server id, the key's user and the processed payload", async () => {
    const res = await api.post("/feedback/create", { project_id: P, weave_ref: ref("c-shape"), feedback_type: "wandb.reaction.1", payload: { emoji: "👍🏽" }, wb_user_id: "spoofed" });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Feedback;
    expect(Object.keys(body)).toEqual(["id", "created_at", "wb_user_id", "payload"]);
    expect(body.id).toMatch(UUIDV7);
    expect(body.created_at).toMatch(ISO_MICROS);
    expect(Math.abs(Date.parse(body.created_at as string) - Date.now())).toBeLessThan(60_000);
    expect(body.wb_user_id).toBe("alice");
    expect(body.payload).toEqual({ emoji: "👍🏽", detoned: "👍" });
  });

  it("stores every field and reads it back in the query record shape", async () => {
    const created = await create({
      id: "fb-explicit", weave_ref: ref("c-full"), feedback_type: "wandb.runnable.judge", payload: { output: { score: 0.5, label: "ok" } },
      creator: "Jane", runnable_ref: `weave:///${P}/op/judge:abc`, call_ref: ref("judge-call"), trigger_ref: `weave:///${P}/object/monitor:v1`, queue_id: "q-1",
    });
    expect(created.id).toBe("fb-explicit");
    const [stored] = await query({ query: byRef(ref("c-full")) });
    expect(stored).toEqual({
      id: "fb-explicit", project_id: P, weave_ref: ref("c-full"), wb_user_id: "alice", creator: "Jane", created_at: created.created_at,
      feedback_type: "wandb.runnable.judge", payload: { output: { score: 0.5, label: "ok" } }, annotation_ref: null,
      runnable_ref: `weave:///${P}/op/judge:abc`, call_ref: ref("judge-call"), trigger_ref: `weave:///${P}/object/monitor:v1`, queue_id: "q-1",
    });
  });

  it("accepts exactly one emoji, whatever its composition", async () => {
    for (const emoji of ["👍", "🎉", "👨‍👩‍👧", "🇫🇷", "1️⃣", "❤️", "👍🏿"]) {
      const res = await api.post("/feedback/create", { project_id: P, weave_ref: ref("c-emoji"), feedback_type: "wandb.reaction.1", payload: { emoji } });
      expect(res.status, emoji).toBe(200);
    }
  });

  it("refuses two emojis, text, an empty or missing emoji with 422 on payload.emoji, and writes nothing", async () => {
    for (const payload of [{ emoji: "👍👍" }, { emoji: "👍🎉" }, { emoji: "hello" }, { emoji: "a" }, { emoji: "1" }, { emoji: "" }, { emoji: " 👍" }, { emoji: 5 }, {}]) {
      const res = await api.post("/feedback/create", { project_id: P, weave_ref: ref("c-bad-emoji"), feedback_type: "wandb.reaction.1", payload });
      expect(res.status, JSON.stringify(payload)).toBe(422);
      const body = (await res.json()) as Detail;
      expect(body.detail).toHaveLength(1);
      expect(body.detail[0]).toMatchObject({ loc: ["body", "payload", "emoji"], msg: expect.any(String), type: expect.any(String) });
    }
    expect(await query({ query: byRef(ref("c-bad-emoji")) })).toEqual([]);
  });

  it("limits notes to 1 to 1024 characters", async () => {
    const note = (text: unknown) => api.post("/feedback/create", { project_id: P, weave_ref: ref("c-note"), feedback_type: "wandb.note.1", payload: { note: text } });
    expect((await note("looks right")).status).toBe(200);
    expect((await note("é".repeat(1024))).status).toBe(200);
    expect((await note("🙂".repeat(1024))).status).toBe(200);
    const long = await note("x".repeat(1025));
    expect(long.status).toBe(422);
    expect(((await long.json()) as Detail).detail[0]).toMatchObject({ loc: ["body", "payload", "note"], msg: "note is longer than 1024 characters (1025)" });
    expect((await note("")).status).toBe(422);
    expect((await note(["not", "text"])).status).toBe(422);
    expect((await query({ query: byRef(ref("c-note")) })).map((f) => (f.payload.note as string).length)).toEqual([11, 1024, 2048]);
  });

  it("takes any payload for other types up to 64 KiB of JSON", async () => {
    const custom = (payload: Record<string, unknown>) => api.post("/feedback/create", { project_id: P, weave_ref: ref("c-custom"), feedback_type: "thumbs", payload });
    expect((await custom({ any: { nested: [1, "two", null, true] } })).status).toBe(200);
    expect((await custom({ blob: "x".repeat(64 * 1024 - 20) })).status).toBe(200);
    const big = await custom({ blob: "x".repeat(64 * 1024) });
    expect(big.status).toBe(422);
    expect(((await big.json()) as Detail).detail[0]!.loc).toEqual(["body", "payload"]);
    expect((await custom({})).status).toBe(200);
  });

  it("requires weave_ref to be a weave:/// ref of the request's project", async () => {
    for (const weaveRef of ["weave:///acme/elsewhere/call/x", "https://example.com/x", "weave:///acme", "call-id"]) {
      const res = await api.post("/feedback/create", { project_id: P, weave_ref: weaveRef, feedback_type: "thumbs", payload: {} });
      expect(res.status, weaveRef).toBe(422);
      expect(((await res.json()) as Detail).detail[0]!.loc).toEqual(["body", "weave_ref"]);
    }
    const res = await api.post("/feedback/create", { project_id: P, weave_ref: ref("c"), feedback_type: "thumbs", payload: {}, call_ref: "weave:///other/p/call/x" });
    expect(((await res.json()) as Detail).detail[0]!.loc).toEqual(["body", "call_ref"]);
    const shape = await api.post("/feedback/create", { project_id: P, weave_ref: ref("c"), payload: {} });
    expect(shape.status).toBe(422);
    expect(((await shape.json()) as Detail).detail[0]!.loc).toEqual(["body", "feedback_type"]);
  });
});

describe("batch create", () => {
  it("creates all items in order and answers {res: [...]} with one create answer each", async () => {
    const batch = [
      { project_id: P, weave_ref: ref("b1"), feedback_type: "wandb.reaction.1", payload: { emoji: "👍" } },
      { project_id: P, weave_ref: ref("b1"), feedback_type: "wandb.note.1", payload: { note: "hi" } },
      { project_id: P, weave_ref: ref("b2"), feedback_type: "thumbs", payload: { up: true }, id: "batch-explicit" },
    ];
    const { res } = await api.json<{ res: Feedback[] }>("/feedback/batch/create", { batch });
    expect(res).toHaveLength(3);
    for (const item of res) expect(Object.keys(item)).toEqual(["id", "created_at", "wb_user_id", "payload"]);
    expect(res.map((r) => r.payload)).toEqual([{ emoji: "👍", detoned: "👍" }, { note: "hi" }, { up: true }]);
    expect(res[2]!.id).toBe("batch-explicit");
    const stored = await query({ query: { $expr: { $in: [{ $getField: "weave_ref" }, [{ $literal: ref("b1") }, { $literal: ref("b2") }]] } } });
    expect(ids(stored)).toEqual(ids(res));
    expect(await api.json("/feedback/batch/create", { batch: [] })).toEqual({ res: [] });
  });

  it("writes nothing when one item is invalid, and names every bad item", async () => {
    const batch = [
      { project_id: P, weave_ref: ref("all-or-nothing"), feedback_type: "wandb.reaction.1", payload: { emoji: "👍" } },
      { project_id: P, weave_ref: ref("all-or-nothing"), feedback_type: "wandb.reaction.1", payload: { emoji: "two words" } },
      { project_id: P, weave_ref: ref("all-or-nothing"), feedback_type: "wandb.note.1", payload: { note: "n".repeat(2000) } },
    ];
    const res = await api.post("/feedback/batch/create", { batch });
    expect(res.status).toBe(422);
    expect(((await res.json()) as Detail).detail.map((d) => d.loc)).toEqual([
      ["body", "batch", 1, "payload", "emoji"],
      ["body", "batch", 2, "payload", "note"],
    ]);
    expect(await query({ query: byRef(ref("all-or-nothing")) })).toEqual([]);
  });

  it("answers 403 when any item names a project the key cannot reach, and writes nothing", async () => {
    const batch = [
      { project_id: P, weave_ref: ref("mixed"), feedback_type: "thumbs", payload: {} },
      { project_id: "other/p", weave_ref: "weave:///other/p/call/x", feedback_type: "thumbs", payload: {} },
    ];
    expect((await api.post("/feedback/batch/create", { batch })).status).toBe(403);
    expect(await query({ query: byRef(ref("mixed")) })).toEqual([]);
  });
});

describe("query", () => {
  const Q = "acme/fbquery";
  let made: Feedback[] = [];
  beforeAll(async () => {
    const batch = [0, 1, 2, 3, 4, 5].map((i) => ({
      project_id: Q, weave_ref: `weave:///${Q}/call/q${i % 3}`, feedback_type: i % 2 ? "wandb.runnable.judge" : "custom",
      payload: i % 2 ? { output: { score: i / 10, label: i > 2 ? "good" : "bad" } } : { text: `Note Nº${i}`, n: 10 - i }, creator: i === 4 ? "Zed" : null,
    }));
    made = (await api.json<{ res: Feedback[] }>("/feedback/batch/create", { batch })).res;
  });

  it("returns every field in created order by default", async () => {
    const all = await query({}, Q);
    expect(ids(all)).toEqual(ids(made));
    expect(Object.keys(all[0]!)).toEqual([
      "id", "project_id", "weave_ref", "wb_user_id", "creator", "created_at", "feedback_type", "payload",
      "annotation_ref", "runnable_ref", "call_ref", "trigger_ref", "queue_id",
    ]);
  });

  it("returns only the asked fields", async () => {
    const [first] = await query({ fields: ["payload", "id", "feedback_type"], limit: 1 }, Q);
    expect(first).toEqual({ id: made[0]!.id, feedback_type: "custom", payload: { text: "Note Nº0", n: 10 } });
    const res = await api.post("/feedback/query", { project_id: Q, fields: ["id", "nope"] });
    expect(res.status).toBe(422);
    expect(((await res.json()) as Detail).detail[0]!.loc).toEqual(["body", "fields", 1]);
  });

  it("sorts, pages and filters on payload paths and columns", async () => {
    const score = { field: "payload.output.score", direction: "desc" as const };
    expect(ids(await query({ sort_by: [score], limit: 2 }, Q))).toEqual([made[5]!.id, made[3]!.id]);
    // No score sorts last; ties break on id in the last sort's direction.
    const unscored = [made[0]!.id, made[2]!.id, made[4]!.id].sort().reverse();
    expect(ids(await query({ sort_by: [score], limit: 2, offset: 2 }, Q))).toEqual([made[1]!.id, unscored[0]]);
    expect(ids(await query({ sort_by: [{ field: "created_at", direction: "desc" }], offset: 4 }, Q))).toEqual([made[1]!.id, made[0]!.id]);
    expect(ids(await query({ sort_by: [{ field: "payload.n", direction: "asc" }], limit: 3 }, Q))).toEqual([made[4]!.id, made[2]!.id, made[0]!.id]);
    const good = { $expr: { $eq: [{ $getField: "payload.output.label" }, { $literal: "good" }] } };
    expect(ids(await query({ query: good }, Q))).toEqual([made[3]!.id, made[5]!.id]);
    const high = { $expr: { $gt: [{ $getField: "payload.output.score" }, { $literal: 0.2 }] } };
    expect(ids(await query({ query: high }, Q))).toEqual([made[3]!.id, made[5]!.id]);
    const text = { $expr: { $contains: { input: { $getField: "payload.text" }, substr: { $literal: "nº4" }, case_insensitive: true } } };
    expect(ids(await query({ query: text }, Q))).toEqual([made[4]!.id]);
    const both = { $expr: { $and: [{ $eq: [{ $getField: "feedback_type" }, { $literal: "custom" }] }, { $eq: [{ $getField: "weave_ref" }, { $literal: `weave:///${Q}/call/q1` }] }] } };
    expect(ids(await query({ query: both }, Q))).toEqual([made[4]!.id]);
    const creator = { $expr: { $eq: [{ $getField: "creator" }, { $literal: "Zed" }] } };
    expect(ids(await query({ query: creator }, Q))).toEqual([made[4]!.id]);
    const since = { $expr: { $gte: [{ $getField: "created_at" }, { $literal: made[5]!.created_at }] } };
    expect(ids(await query({ query: since }, Q))).toEqual([made[5]!.id]);
  });

  it("refuses unknown fields in query and sort_by with 422", async () => {
    for (const body of [
      { query: { $expr: { $eq: [{ $getField: "inputs.x" }, { $literal: 1 }] } } },
      { sort_by: [{ field: "nope", direction: "asc" }] },
      { limit: 10_001 },
    ]) {
      expect((await api.post("/feedback/query", { project_id: Q, ...body })).status, JSON.stringify(body)).toBe(422);
    }
  });
});

describe("purge and replace", () => {
  const R = "acme/fbpurge";
  const mk = (call: string, extra: Record<string, unknown> = {}) =>
    api.json<Feedback>("/feedback/create", { project_id: R, weave_ref: `weave:///${R}/call/${call}`, feedback_type: "thumbs", payload: { v: 1 }, ...extra });
  const all = () => query({}, R);

  it("purges by id, by $in and $or of ids, and by any query, visible at once", async () => {
    const [a, b, c, d, e] = [await mk("p"), await mk("p"), await mk("p"), await mk("p"), await mk("p", { payload: { v: 9 } })];
    expect(await api.json("/feedback/purge", { project_id: R, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: a.id }] } } })).toEqual({});
    expect(ids(await all())).toEqual([b.id, c.id, d.id, e.id]);
    await api.json("/feedback/purge", { project_id: R, query: { $expr: { $in: [{ $getField: "id" }, [{ $literal: b.id }, { $literal: "missing" }]] } } });
    await api.json("/feedback/purge", { project_id: R, query: { $expr: { $or: [{ $eq: [{ $getField: "id" }, { $literal: c.id }] }] } } });
    expect(ids(await all())).toEqual([d.id, e.id]);
    await api.json("/feedback/purge", { project_id: R, query: { $expr: { $gt: [{ $getField: "payload.v" }, { $literal: 5 }] } } });
    expect(ids(await all())).toEqual([d.id]);
    // Purging again, or purging nothing, is harmless.
    await api.json("/feedback/purge", { project_id: R, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: a.id }] } } });
    expect(ids(await all())).toEqual([d.id]);
    await api.json("/feedback/purge", { project_id: R, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: d.id }] } } });
    expect(await all()).toEqual([]);
  });

  it("requires a query and touches no other project", async () => {
    const keep = await api.json<Feedback>("/feedback/create", { project_id: "acme/fbkeep", weave_ref: "weave:///acme/fbkeep/call/k", feedback_type: "thumbs", payload: {} });
    expect((await api.post("/feedback/purge", { project_id: R })).status).toBe(422);
    await api.json("/feedback/purge", { project_id: R, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: keep.id }] } } });
    expect(ids(await query({}, "acme/fbkeep"))).toEqual([keep.id]);
  });

  it("replaces: the old feedback disappears and the new one, with a new id, answers like create", async () => {
    const old = await mk("r", { payload: { v: 1 } });
    const res = await api.post("/feedback/replace", {
      project_id: R, feedback_id: old.id, weave_ref: `weave:///${R}/call/r`, feedback_type: "wandb.note.1", payload: { note: "edited" },
    });
    expect(res.status).toBe(200);
    const fresh = (await res.json()) as Feedback;
    expect(Object.keys(fresh)).toEqual(["id", "created_at", "wb_user_id", "payload"]);
    expect(fresh).toMatchObject({ wb_user_id: "alice", payload: { note: "edited" } });
    expect(fresh.id).not.toBe(old.id);
    expect(fresh.id).toMatch(UUIDV7);
    const now = await query({ query: byRef(`weave:///${R}/call/r`) }, R);
    expect(now).toEqual([expect.objectContaining({ id: fresh.id, feedback_type: "wandb.note.1", payload: { note: "edited" } })]);
  });

  it("replaces again and again, and validates the new payload before deleting anything", async () => {
    let current = await mk("rr");
    for (let i = 0; i < 3; i++) {
      current = await api.json<Feedback>("/feedback/replace", { project_id: R, feedback_id: current.id, weave_ref: `weave:///${R}/call/rr`, feedback_type: "thumbs", payload: { v: i } });
    }
    const bad = await api.post("/feedback/replace", { project_id: R, feedback_id: current.id, weave_ref: `weave:///${R}/call/rr`, feedback_type: "wandb.reaction.1", payload: { emoji: "no" } });
    expect(bad.status).toBe(422);
    expect(await query({ query: byRef(`weave:///${R}/call/rr`) }, R)).toEqual([expect.objectContaining({ id: current.id, payload: { v: 2 } })]);
  });

  it("creates the new feedback even when feedback_id no longer exists (as Weave does)", async () => {
    const made = await api.json<Feedback>("/feedback/replace", { project_id: R, feedback_id: "gone", weave_ref: `weave:///${R}/call/rm`, feedback_type: "thumbs", payload: {} });
    expect(ids(await query({ query: byRef(`weave:///${R}/call/rm`) }, R))).toEqual([made.id]);
  });
});

describe("feedback on calls", () => {
  const C = "acme/fbcalls";
  const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);
  const cref = (id: string) => `weave:///${C}/call/${id}`;
  const fb = (call: string, feedback_type: string, payload: Record<string, unknown>) =>
    api.json<Feedback>("/feedback/create", { project_id: C, weave_ref: cref(call), feedback_type, payload });
  const calls = (body: Record<string, unknown>) => api.lines<{ id: string; summary: Record<string, any> }>("/calls/stream_query", { project_id: C, ...body });
  const eq = (path: string, value: unknown) => ({ $expr: { $eq: [{ $getField: path }, { $literal: value }] } });

  beforeAll(async () => {
    const batch = [];
    for (let i = 0; i < 5; i++) {
      const id = `c${i}`;
      batch.push({ mode: "start", req: { start: { project_id: C, id, op_name: "op", trace_id: "t", started_at: iso(T0 + i * 1000), attributes: {}, inputs: { i } } } });
      batch.push({ mode: "end", req: { end: { project_id: C, id, ended_at: iso(T0 + i * 1000 + 10), output: null, summary: {} } } });
    }
    await api.json("/call/upsert_batch", { batch });
    await fb("c0", "wandb.reaction.1", { emoji: "👍" });
    await fb("c0", "wandb.note.1", { note: "first" });
    await fb("c1", "wandb.reaction.1", { emoji: "👎" });
    await fb("c2", "wandb.reaction.1", { emoji: "👍" });
    await fb("c2", "wandb.reaction.1", { emoji: "🎉" });
    await fb("c3", "wandb.runnable.judge", { output: { score: 0.9 } });
    await fb("c1", "wandb.runnable.judge", { output: { score: 0.4 } });
    await fb("c0", "wandb.runnable.judge", { output: { score: 0.7 } });
    // Feedback on the same call id in another project never leaks in.
    await api.json("/feedback/create", { project_id: "acme/fbcalls-other", weave_ref: "weave:///acme/fbcalls-other/call/c4", feedback_type: "wandb.reaction.1", payload: { emoji: "👍" } });
  });

  it("attaches each call's feedback in summary.weave.feedback, as /feedback/query returns it", async () => {
    const list = await calls({ include_feedback: true });
    expect(list.map((c) => c.id)).toEqual(["c0", "c1", "c2", "c3", "c4"]);
    for (const call of list) {
      const expected = await query({ query: byRef(cref(call.id)) }, C);
      expect(call.summary.weave.feedback, call.id).toEqual(expected);
      expect(call.summary.weave).toMatchObject({ status: "success", latency_ms: 10 });
    }
    expect(list[0]!.summary.weave.feedback.map((f: Feedback) => f.feedback_type)).toEqual(["wandb.reaction.1", "wandb.note.1", "wandb.runnable.judge"]);
    expect(list[4]!.summary.weave.feedback).toEqual([]);
    const plain = await calls({ limit: 1 });
    expect(plain[0]!.summary.weave.feedback).toBeUndefined();
  });

  it("filters calls by the latest reaction's emoji and sorts by a scorer's output", async () => {
    const ids = (list: { id: string }[]) => list.map((c) => c.id);
    expect(ids(await calls({ query: eq("feedback.[wandb.reaction.1].payload.emoji", "👍") }))).toEqual(["c0"]);
    expect(ids(await calls({ query: eq("feedback.[wandb.reaction.1].payload.emoji", "🎉") }))).toEqual(["c2"]);
    const anyReaction = { $expr: { $gt: [{ $getField: "feedback.[wandb.reaction.1].count" }, { $literal: 0 }] } };
    expect(ids(await calls({ query: anyReaction }))).toEqual(["c0", "c1", "c2"]);
    expect(ids(await calls({ query: eq("feedback.[wandb.reaction.1].count", 2) }))).toEqual(["c2"]);
    const noReaction = { $expr: { $not: [{ $convert: { input: { $getField: "feedback.[wandb.reaction.1].payload.emoji" }, to: "exists" } }] } };
    expect(ids(await calls({ query: noReaction }))).toEqual(["c3", "c4"]);
    const inList = { $expr: { $in: [{ $getField: "feedback.[wandb.reaction.1].payload.emoji" }, [{ $literal: "👎" }, { $literal: "🎉" }]] } };
    expect(ids(await calls({ query: inList }))).toEqual(["c1", "c2"]);
    const scored = { $expr: { $gte: [{ $getField: "feedback.[wandb.runnable.judge].payload.output.score" }, { $literal: 0.5 }] } };
    expect(ids(await calls({ query: scored }))).toEqual(["c0", "c3"]);
    const byScore = await calls({ sort_by: [{ field: "feedback.[wandb.runnable.judge].payload.output.score", direction: "desc" }] });
    // Calls without a score sort last; ties break on id in the sort's direction.
    expect(ids(byScore)).toEqual(["c3", "c0", "c1", "c4", "c2"]);
    const filteredAndSorted = await calls({ query: anyReaction, sort_by: [{ field: "feedback.[wandb.runnable.judge].payload.output.score", direction: "asc" }], limit: 2 });
    expect(ids(filteredAndSorted)).toEqual(["c1", "c0"]);
    expect(await api.json("/calls/query_stats", { project_id: C, query: anyReaction })).toEqual({ count: 3 });
    const byUser = eq("feedback.[wandb.note.1].wb_user_id", "alice");
    expect(ids(await calls({ query: byUser }))).toEqual(["c0"]);
  });

  it("follows purges and new feedback at once", async () => {
    const [thumbsUp] = await query({ query: { $expr: { $and: [byRef(cref("c0")).$expr, eq("feedback_type", "wandb.reaction.1").$expr] } } }, C);
    await api.json("/feedback/purge", { project_id: C, query: eq("id", thumbsUp!.id) });
    const ids = (list: { id: string }[]) => list.map((c) => c.id);
    expect(ids(await calls({ query: eq("feedback.[wandb.reaction.1].payload.emoji", "👍") }))).toEqual([]);
    await fb("c4", "wandb.reaction.1", { emoji: "👍" });
    expect(ids(await calls({ query: eq("feedback.[wandb.reaction.1].payload.emoji", "👍") }))).toEqual(["c4"]);
    const [c0] = await calls({ include_feedback: true, filter: { call_ids: ["c0"] } });
    expect(c0!.summary.weave.feedback.map((f: Feedback) => f.feedback_type)).toEqual(["wandb.note.1", "wandb.runnable.judge"]);
  });

  it("refuses malformed feedback paths with 422", async () => {
    for (const path of ["feedback.wandb.reaction.1.payload.emoji", "feedback.[wandb.reaction.1].nope", "feedback.[wandb.reaction.1]", "feedback.[x].payload.a'b"]) {
      const res = await api.post("/calls/stream_query", { project_id: C, query: eq(path, "x") });
      expect(res.status, path).toBe(422);
    }
  });
});

describe("payload_schema", () => {
  const S = "acme/fbschema";
  it("lists the payload paths seen, with their value types, and the builtin ones", async () => {
    const batch = [
      { payload: { output: { score: 0.5, passed: true, reason: "fine" } }, feedback_type: "wandb.runnable.judge", trigger_ref: `weave:///${S}/object/mon:v1` },
      { payload: { output: { score: 1, passed: false, extra: [1, 2] } }, feedback_type: "wandb.runnable.judge", trigger_ref: `weave:///${S}/object/mon:v2` },
      { payload: { mixed: 1 }, feedback_type: "custom" },
      { payload: { mixed: "one", "it's": 1, "with space": 2 }, feedback_type: "custom" },
    ].map((f) => ({ project_id: S, weave_ref: `weave:///${S}/call/x`, ...f }));
    await api.json("/feedback/batch/create", { batch });
    expect(await api.json("/feedback/payload_schema", { project_id: S })).toEqual({
      paths: [
        { json_path: "mixed", value_type: "categorical" },
        { json_path: "output.passed", value_type: "boolean" },
        { json_path: "output.reason", value_type: "categorical" },
        { json_path: "output.score", value_type: "numeric" },
        { json_path: "with space", value_type: "numeric" },
      ],
    });
    expect(await api.json("/feedback/payload_schema", { project_id: S, feedback_type: "wandb.runnable.judge", trigger_ref: `weave:///${S}/object/mon:v2` })).toEqual({
      paths: [{ json_path: "output.passed", value_type: "boolean" }, { json_path: "output.score", value_type: "numeric" }],
    });
    expect(await api.json("/feedback/payload_schema", { project_id: S, trigger_ref: `weave:///${S}/object/mon:*` })).toEqual({
      paths: [
        { json_path: "output.passed", value_type: "boolean" },
        { json_path: "output.reason", value_type: "categorical" },
        { json_path: "output.score", value_type: "numeric" },
      ],
    });
    expect(await api.json("/feedback/payload_schema", { project_id: S, feedback_type: "wandb.reaction.1" })).toEqual({
      paths: [{ json_path: "detoned", value_type: "categorical" }, { json_path: "emoji", value_type: "categorical" }],
    });
    expect(await api.json("/feedback/payload_schema", { project_id: S, start: "2000-01-01T00:00:00Z", end: "2000-01-02T00:00:00Z" })).toEqual({ paths: [] });
  });
});

describe("access", () => {
  it("answers 403 on every feedback operation for another entity's project", async () => {
    const other = client(service.url, KEY_OTHER);
    const base = { project_id: P, weave_ref: ref("x"), feedback_type: "thumbs", payload: {} };
    const bodies: [string, unknown][] = [
      ["/feedback/create", base],
      ["/feedback/batch/create", { batch: [base] }],
      ["/feedback/replace", { ...base, feedback_id: "x" }],
      ["/feedback/query", { project_id: P }],
      ["/feedback/purge", { project_id: P, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: "x" }] } } }],
      ["/feedback/payload_schema", { project_id: P }],
      ["/feedback/stats", { project_id: P, start: "2026-01-01T00:00:00Z" }],
    ];
    for (const [path, body] of bodies) expect((await other.post(path, body)).status, path).toBe(403);
    expect(await query({ query: byRef(ref("x")) })).toEqual([]);
  });

  it("lists the feedback operations in the OpenAPI document", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      "/feedback/create", "/feedback/batch/create", "/feedback/query", "/feedback/purge", "/feedback/replace", "/feedback/payload_schema", "/feedback/stats",
    ]));
  });
});
