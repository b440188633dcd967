import { beforeAll, describe, expect, it } from "vitest";
import { storeOn } from "../support/database.js";
import { iso, KEY_ADMIN, serviceForFile } from "../support/service.js";
import { annotationApi, ISO_MICROS, UUIDV7, logCalls, type Detail, type Item } from "./support.js";

const service = serviceForFile();
const T0 = Date.parse("2026-11-20T08:00:00Z");


describe("add calls", () => {
  const P = "acme/items-add";
  let aq: ReturnType<typeof annotationApi>;

  beforeAll(async () => {
    aq = annotationApi(service.url, P);
    await logCalls(aq.api, P, [
      { id: "c1", op: "weave:///acme/items-add/op/answer:v1", trace: "tr-1", startedAt: iso(T0, 123), endedAt: iso(T0 + 1500, 456) },
      { id: "c2", op: "weave:///acme/items-add/op/judge:v1", trace: "tr-2", startedAt: iso(T0 + 1000) },
      { id: "c3", startedAt: iso(T0 + 2000), endedAt: iso(T0 + 3000) },
    ]);
    await logCalls(aq.api, "acme/items-add-other", [{ id: "foreign", startedAt: iso(T0) }]);
  });

  it("copies each call's started_at, ended_at, op_name and trace_id into its item", async () => {
    const queue = await aq.create({ name: "copy" });
    const res = await aq.api.post(`/annotation_queues/${queue}/items`, { project_id: P, call_ids: ["c1", "c2"], display_fields: ["inputs.q", "output"], wb_user_id: "spoofed" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ added_count: 2, duplicates: 0 });
    const items = await aq.items(queue);
    const [first, second] = items;
    expect(items).toEqual([
      {
        id: first!.id, project_id: P, queue_id: queue, call_id: "c1", call_started_at: iso(T0, 123), call_ended_at: iso(T0 + 1500, 456),
        call_op_name: "weave:///acme/items-add/op/answer:v1", call_trace_id: "tr-1", display_fields: ["inputs.q", "output"], added_by: "alice",
        annotation_state: "unstarted", annotator_user_id: null, created_at: first!.created_at, created_by: "alice", updated_at: first!.created_at,
        deleted_at: null, position_in_queue: null,
      },
      {
        id: second!.id, project_id: P, queue_id: queue, call_id: "c2", call_started_at: iso(T0 + 1000), call_ended_at: null,
        call_op_name: "weave:///acme/items-add/op/judge:v1", call_trace_id: "tr-2", display_fields: ["inputs.q", "output"], added_by: "alice",
        annotation_state: "unstarted", annotator_user_id: null, created_at: first!.created_at, created_by: "alice", updated_at: first!.created_at,
        deleted_at: null, position_in_queue: null,
      },
    ]);
    expect(first!.id).toMatch(UUIDV7);
    expect(first!.created_at).toMatch(ISO_MICROS);
    expect(first!.id).not.toBe(second!.id);
  });

  it("keeps the fields as they were when added (a call ended later stays unfinished in its item)", async () => {
    await logCalls(aq.api, P, [{ id: "late", startedAt: iso(T0 + 5000) }]);
    const queue = await aq.create({ name: "snapshot" });
    await aq.add(queue, ["late"]);
    await logCalls(aq.api, P, [{ id: "late", startedAt: iso(T0 + 5000), endedAt: iso(T0 + 6000) }]);
    expect((await aq.items(queue)).map((i) => i.call_ended_at)).toEqual([null]);
  });

  it("counts calls already in the queue and ids named twice as duplicates, and skips unknown ids", async () => {
    const queue = await aq.create({ name: "dups" });
    expect(await aq.add(queue, ["c1", "missing", "c1", "foreign"])).toEqual({ added_count: 1, duplicates: 1 });
    expect(await aq.add(queue, ["c1", "c2", "c3", "c2"])).toEqual({ added_count: 2, duplicates: 2 });
    expect(await aq.add(queue, ["c1", "c2", "c3"])).toEqual({ added_count: 0, duplicates: 3 });
    expect(await aq.add(queue, ["missing"])).toEqual({ added_count: 0, duplicates: 0 });
    expect((await aq.items(queue)).map((i) => i.call_id)).toEqual(["c1", "c2", "c3"]);
  });

  it("skips deleted calls", async () => {
    await logCalls(aq.api, P, [{ id: "doomed", startedAt: iso(T0 + 7000), endedAt: iso(T0 + 7001) }]);
    await aq.api.json("/calls/delete", { project_id: P, call_ids: ["doomed"] });
    const queue = await aq.create({ name: "deleted calls" });
    expect(await aq.add(queue, ["doomed", "c3"])).toEqual({ added_count: 1, duplicates: 0 });
  });

  it("answers 404 for an unknown queue and 422 for bad bodies, adding nothing", async () => {
    expect((await aq.api.post("/annotation_queues/nope/items", { project_id: P, call_ids: ["c1"], display_fields: [] })).status).toBe(404);
    const queue = await aq.create({ name: "bad" });
    const bad = async (body: Record<string, unknown>, loc: (string | number)[]) => {
      const res = await aq.api.post(`/annotation_queues/${queue}/items`, { project_id: P, ...body });
      expect(res.status).toBe(422);
      expect(((await res.json()) as Detail).detail.map((d) => d.loc)).toContainEqual(loc);
    };
    await bad({ call_ids: [], display_fields: [] }, ["body", "call_ids"]);
    await bad({ call_ids: ["c1"] }, ["body", "display_fields"]);
    await bad({ call_ids: "c1", display_fields: [] }, ["body", "call_ids"]);
    await bad({ call_ids: ["c1", ""], display_fields: [] }, ["body", "call_ids", 1]);
    await bad({ call_ids: ["c1"], display_fields: [7] }, ["body", "display_fields", 0]);
    expect(await aq.items(queue)).toEqual([]);
  });
});

describe("query items", () => {
  const P = "acme/items-query";
  let aq: ReturnType<typeof annotationApi>;
  let queue: string;
  let byCall: Map<string, Item>;
  // Added in this order: k0..k9; started_at descending with the index, ops alternate, traces in threes.
  const calls = Array.from({ length: 10 }, (_, i) => ({
    id: `k${i}`, op: i % 2 === 0 ? "even" : "odd", trace: `tr-${Math.floor(i / 3)}`, startedAt: iso(T0 + (10 - i) * 1000), endedAt: iso(T0 + (10 - i) * 1000 + i),
  }));

  beforeAll(async () => {
    aq = annotationApi(service.url, P);
    await logCalls(aq.api, P, calls);
    queue = await aq.create({ name: "q" });
    await aq.add(queue, calls.slice(0, 6).map((c) => c.id));
    const admin = annotationApi(service.url, P, KEY_ADMIN);
    await admin.add(queue, calls.slice(6).map((c) => c.id));
    byCall = new Map((await aq.items(queue)).map((i) => [i.call_id, i]));
    // Progress: k1 completed by alice; k2 in progress by alice; k3 skipped by root; k4 in progress by alice then completed by root.
    const set = async (key: string | undefined, call: string, state: string) => {
      const res = await annotationApi(service.url, P, key).progress(queue, byCall.get(call)!.id, state);
      expect(res.status, `${call} ${state}`).toBe(200);
    };
    await set(undefined, "k1", "completed");
    await set(undefined, "k2", "in_progress");
    await set(KEY_ADMIN, "k3", "skipped");
    await set(undefined, "k4", "in_progress");
    await set(KEY_ADMIN, "k4", "completed");
  });

  const calls_ = (items: Item[]) => items.map((i) => i.call_id);

  it("answers the queue in the order items were added by default", async () => {
    expect(calls_(await aq.items(queue))).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9"]);
  });

  it("shows each item's latest state across annotators and who set it", async () => {
    const items = await aq.items(queue);
    expect(items.map((i) => [i.call_id, i.annotation_state, i.annotator_user_id])).toEqual([
      ["k0", "unstarted", null], ["k1", "completed", "alice"], ["k2", "in_progress", "alice"], ["k3", "skipped", "root"], ["k4", "completed", "root"],
      ["k5", "unstarted", null], ["k6", "unstarted", null], ["k7", "unstarted", null], ["k8", "unstarted", null], ["k9", "unstarted", null],
    ]);
  });

  it("filters by id, call_id, call_op_name, call_trace_id, added_by and annotation_states", async () => {
    const k5 = byCall.get("k5")!;
    expect(await aq.items(queue, { filter: { id: k5.id } })).toEqual([k5]);
    expect(calls_(await aq.items(queue, { filter: { call_id: "k7" } }))).toEqual(["k7"]);
    expect(calls_(await aq.items(queue, { filter: { call_op_name: "odd" } }))).toEqual(["k1", "k3", "k5", "k7", "k9"]);
    expect(calls_(await aq.items(queue, { filter: { call_trace_id: "tr-1" } }))).toEqual(["k3", "k4", "k5"]);
    expect(calls_(await aq.items(queue, { filter: { added_by: "root" } }))).toEqual(["k6", "k7", "k8", "k9"]);
    expect(calls_(await aq.items(queue, { filter: { annotation_states: ["completed", "skipped"] } }))).toEqual(["k1", "k3", "k4"]);
    expect(calls_(await aq.items(queue, { filter: { annotation_states: ["unstarted"] } }))).toEqual(["k0", "k5", "k6", "k7", "k8", "k9"]);
    expect(calls_(await aq.items(queue, { filter: { annotation_states: ["unstarted"], call_op_name: "even" } }))).toEqual(["k0", "k6", "k8"]);
    expect(await aq.items(queue, { filter: { annotation_states: [] } })).toEqual([]);
    expect(await aq.items(queue, { filter: { call_id: "nope" } })).toEqual([]);
  });

  it("sorts by the call's fields, the item's, and the annotation state, ties in queue order", async () => {
    expect(calls_(await aq.items(queue, { sort_by: [{ field: "call_started_at", direction: "asc" }] }))).toEqual(["k9", "k8", "k7", "k6", "k5", "k4", "k3", "k2", "k1", "k0"]);
    expect(calls_(await aq.items(queue, { sort_by: [{ field: "call_op_name", direction: "desc" }] }))).toEqual(["k1", "k3", "k5", "k7", "k9", "k0", "k2", "k4", "k6", "k8"]);
    expect(calls_(await aq.items(queue, { sort_by: [{ field: "call_trace_id", direction: "desc" }, { field: "call_id", direction: "desc" }] })))
      .toEqual(["k9", "k8", "k7", "k6", "k5", "k4", "k3", "k2", "k1", "k0"]);
    expect(calls_(await aq.items(queue, { sort_by: [{ field: "created_at", direction: "desc" }] }))).toEqual(["k6", "k7", "k8", "k9", "k0", "k1", "k2", "k3", "k4", "k5"]);
    expect(calls_(await aq.items(queue, { sort_by: [{ field: "annotation_state", direction: "asc" }] })))
      .toEqual(["k1", "k4", "k2", "k3", "k0", "k5", "k6", "k7", "k8", "k9"]);
  });

  it("pages with limit and offset, on every path", async () => {
    expect(calls_(await aq.items(queue, { limit: 3 }))).toEqual(["k0", "k1", "k2"]);
    expect(calls_(await aq.items(queue, { limit: 3, offset: 8 }))).toEqual(["k8", "k9"]);
    expect(calls_(await aq.items(queue, { offset: 7 }))).toEqual(["k7", "k8", "k9"]);
    expect(calls_(await aq.items(queue, { limit: 2, offset: 1, sort_by: [{ field: "call_started_at", direction: "asc" }] }))).toEqual(["k8", "k7"]);
    expect(calls_(await aq.items(queue, { limit: 2, offset: 1, filter: { annotation_states: ["unstarted"] } }))).toEqual(["k5", "k6"]);
    expect(calls_(await aq.items(queue, { limit: 2, offset: 2, sort_by: [{ field: "annotation_state", direction: "desc" }] }))).toEqual(["k6", "k7"]);
    expect(await aq.items(queue, { limit: 0 })).toEqual([]);
  });

  it("include_position gives each item's 1-based place in the whole queue, whatever the filter, sort and page", async () => {
    const place = (items: Item[]) => items.map((i) => [i.call_id, i.position_in_queue]);
    expect(place(await aq.items(queue, { include_position: true, limit: 3 }))).toEqual([["k0", 1], ["k1", 2], ["k2", 3]]);
    expect(place(await aq.items(queue, { include_position: true, limit: 2, offset: 8 }))).toEqual([["k8", 9], ["k9", 10]]);
    expect(place(await aq.items(queue, { include_position: true, filter: { call_op_name: "odd" }, sort_by: [{ field: "call_started_at", direction: "asc" }] })))
      .toEqual([["k9", 10], ["k7", 8], ["k5", 6], ["k3", 4], ["k1", 2]]);
    expect(place(await aq.items(queue, { include_position: true, filter: { annotation_states: ["completed"] } }))).toEqual([["k1", 2], ["k4", 5]]);
    const plain = await aq.items(queue, { limit: 1 });
    expect(plain[0]!.position_in_queue).toBeNull();
    const withPlace = await aq.items(queue, { limit: 1, include_position: true });
    expect(withPlace).toEqual([{ ...plain[0], position_in_queue: 1 }]);
  });

  it("refuses unknown sort fields and states with 422, and answers 404 for an unknown queue", async () => {
    const bad = async (body: Record<string, unknown>, loc: (string | number)[]) => {
      const res = await aq.api.post(`/annotation_queues/${queue}/items/query`, { project_id: P, ...body });
      expect(res.status).toBe(422);
      expect(((await res.json()) as Detail).detail.map((d) => d.loc)).toContainEqual(loc);
    };
    await bad({ sort_by: [{ field: "position", direction: "asc" }] }, ["body", "sort_by", 0, "field"]);
    await bad({ filter: { annotation_states: ["done"] } }, ["body", "filter", "annotation_states", 0]);
    await bad({ limit: 10_001 }, ["body", "limit"]);
    await bad({ include_position: "yes" }, ["body", "include_position"]);
    expect((await aq.api.post("/annotation_queues/nope/items/query", { project_id: P })).status).toBe(404);
  });

  it("stats: total items, and those completed or skipped by at least one annotator", async () => {
    const empty = await aq.create({ name: "empty" });
    expect(await aq.stats([queue, "nope", empty, queue])).toEqual([
      { queue_id: queue, total_items: 10, completed_items: 3 },
      { queue_id: empty, total_items: 0, completed_items: 0 },
    ]);
    expect(await aq.stats([])).toEqual([]);
    expect(await annotationApi(service.url, "acme/items-query-other").stats([queue])).toEqual([]);
  });
});

describe("progress", () => {
  const P = "acme/progress";
  let aq: ReturnType<typeof annotationApi>;
  let queue: string;
  const STATES = ["unstarted", "in_progress", "completed", "skipped"] as const;
  /** How an annotator reaches each starting state (none: never touched). */
  const REACH: Record<string, string[]> = { none: [], in_progress: ["in_progress"], completed: ["completed"], skipped: ["skipped"] };
  /** What each move does: the spec's table, every pair. */
  const EXPECTED: Record<string, Record<(typeof STATES)[number], "write" | "noop" | 409>> = {
    none: { unstarted: 409, in_progress: "write", completed: "write", skipped: "write" },
    in_progress: { unstarted: 409, in_progress: "noop", completed: "write", skipped: "write" },
    completed: { unstarted: 409, in_progress: 409, completed: "noop", skipped: 409 },
    skipped: { unstarted: 409, in_progress: 409, completed: 409, skipped: "noop" },
  };
  const cases = Object.entries(EXPECTED).flatMap(([from, targets]) => STATES.map((to) => ({ from, to, outcome: targets[to] })));

  beforeAll(async () => {
    aq = annotationApi(service.url, P);
    await logCalls(aq.api, P, cases.map((_, i) => ({ id: `p${i}`, startedAt: iso(T0 + i) })));
    queue = await aq.create({ name: "machine" });
    await aq.add(queue, cases.map((_, i) => `p${i}`));
  });

  it.each(cases.map((c, i) => ({ ...c, i })))("$from → $to: $outcome", async ({ from, to, outcome, i }) => {
    const [item] = await aq.items(queue, { filter: { call_id: `p${i}` } });
    for (const step of REACH[from]!) expect((await aq.progress(queue, item!.id, step)).status).toBe(200);
    const before = (await aq.items(queue, { filter: { id: item!.id } }))[0]!;
    const res = await aq.progress(queue, item!.id, to);
    const after = (await aq.items(queue, { filter: { id: item!.id } }))[0]!;
    if (outcome === 409) {
      expect(res.status).toBe(409);
      const body = (await res.json()) as { detail: string; message: string };
      const shown = from === "none" ? "not started (no state yet)" : `'${from}'`;
      expect(body.detail).toContain(`Cannot move the item from ${shown} to '${to}'`);
      expect(body.detail).toContain("Nothing was changed.");
      expect(body.message).toBe(body.detail);
      expect(after).toEqual(before);
    } else {
      expect(res.status).toBe(200);
      const { item: answered } = (await res.json()) as { item: Item };
      expect(answered).toEqual({ ...before, annotation_state: to, annotator_user_id: "alice" });
      expect(after).toEqual(outcome === "noop" ? before : answered);
    }
  });

  it("keeps one state per annotator: another annotator starts from none", async () => {
    const [item] = await aq.items(queue, { filter: { call_id: "p0" } });
    expect((await aq.progress(queue, item!.id, "completed")).status).toBe(200);
    expect((await aq.progress(queue, item!.id, "in_progress")).status).toBe(409);
    const root = annotationApi(service.url, P, KEY_ADMIN);
    const res = await root.progress(queue, item!.id, "in_progress");
    expect(res.status).toBe(200);
    expect(((await res.json()) as { item: Item }).item).toMatchObject({ annotation_state: "in_progress", annotator_user_id: "root" });
    expect((await aq.items(queue, { filter: { id: item!.id } }))[0]).toMatchObject({ annotation_state: "in_progress", annotator_user_id: "root" });
    expect((await root.progress(queue, item!.id, "skipped")).status).toBe(200);
    expect((await aq.stats([queue]))[0]!.completed_items).toBeGreaterThan(0);
  });

  it("answers 404 for an unknown item or queue, 422 for an unknown state", async () => {
    expect((await aq.progress(queue, "no-such-item", "completed")).status).toBe(404);
    expect((await aq.progress("no-such-queue", "x", "completed")).status).toBe(404);
    const [item] = await aq.items(queue, { filter: { call_id: "p1" } });
    const other = await aq.create({ name: "other" });
    expect((await aq.progress(other, item!.id, "completed")).status).toBe(404);
    const res = await aq.progress(queue, item!.id, "done");
    expect(res.status).toBe(422);
    expect(((await res.json()) as Detail).detail.map((d) => d.loc)).toContainEqual(["body", "annotation_state"]);
  });
});

describe("items that share a position", () => {
  it("are ranked by id, in pages and in include_position (two processes adding in the same microsecond)", async () => {
    const P = "acme/items-ties";
    const aq = annotationApi(service.url, P);
    const queue = await aq.create({ name: "ties" });
    const store = await storeOn(service.database);
    const row = (id: string, position: number) => ({
      project_id: P, queue_id: queue, position, id, call_id: `call-${id}`, call_started_at: 1, call_ended_at: null, call_op_name: "op",
      call_trace_id: "t", display_fields: [], added_by: "alice", created_at: 1, created_by: "alice",
    });
    try {
      await store.insert("test_ties", "annotation_queue_items", [row("b", 20), row("z", 10), row("a", 20), row("c", 30)]);
    } finally {
      await store.close();
    }
    const place = (items: Item[]) => items.map((i) => [i.id, i.position_in_queue]);
    expect(place(await aq.items(queue, { include_position: true }))).toEqual([["z", 1], ["a", 2], ["b", 3], ["c", 4]]);
    expect(place(await aq.items(queue, { include_position: true, limit: 1, offset: 2 }))).toEqual([["b", 3]]);
    expect(place(await aq.items(queue, { include_position: true, sort_by: [{ field: "id", direction: "desc" }], limit: 2 }))).toEqual([["z", 1], ["c", 4]]);
  });
});
