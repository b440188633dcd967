import { beforeAll, describe, expect, inject, it } from "vitest";
import { client, iso, KEY_ACME, KEY_OTHER, serviceForFile } from "../support/service.js";

type Call = Record<string, unknown> & { id: string; summary: Record<string, unknown> | null };

const service = serviceForFile();
const api = service.api;
const P = "acme/pipeline";
const T0 = Date.UTC(2026, 10, 1, 12, 0, 0);

const start = (id: string, at: number, extra: Record<string, unknown> = {}) => ({
  project_id: P, id, op_name: "weave:///acme/pipeline/op/agent:abc", trace_id: "trace-1", started_at: iso(at), attributes: {}, inputs: { q: id }, ...extra,
});
const end = (id: string, at: number, extra: Record<string, unknown> = {}) => ({
  project_id: P, id, ended_at: iso(at), output: { answer: id }, summary: {}, ...extra,
});


const query = (body: Record<string, unknown>) => api.lines<Call>("/calls/stream_query", { project_id: P, ...body });

describe("calls through ingest → queue → worker → ClickHouse → query", () => {
  it("starts and ends a call, then reads it back whole, with microseconds kept", async () => {
    const startRes = await api.json<{ id: string; trace_id: string }>("/call/start", {
      start: { ...start("c1", T0), started_at: "2026-11-01T12:00:00.123456Z", display_name: "first", wb_user_id: "spoofed" },
    });
    expect(startRes).toEqual({ id: "c1", trace_id: "trace-1" });
    expect(await api.json("/call/end", { end: end("c1", T0 + 1500, { summary: { usage: { "gpt-4o": { prompt_tokens: 3, completion_tokens: 5, requests: 1 } } } }) })).toEqual({});
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "c1" });
    expect(call).toMatchObject({
      id: "c1", project_id: P, trace_id: "trace-1", parent_id: null, display_name: "first",
      started_at: "2026-11-01T12:00:00.123456Z", ended_at: "2026-11-01T12:00:01.500000Z",
      inputs: { q: "c1" }, output: { answer: "c1" }, exception: null, wb_user_id: "alice", deleted_at: null,
    });
    expect(call.summary).toEqual({
      usage: { "gpt-4o": { prompt_tokens: 3, completion_tokens: 5, requests: 1 } },
      weave: { status: "success", trace_name: "first", latency_ms: 1376 },
    });
  });

  it("generates time-ordered ids when the client sends none", async () => {
    const a = await api.json<{ id: string; trace_id: string }>("/call/start", { start: { ...start("x", T0), id: undefined, trace_id: undefined } });
    expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(a.trace_id).not.toBe(a.id);
  });

  it("merges an end that arrives before its start, across batches", async () => {
    const r1 = await api.json<{ res: unknown[] }>("/call/upsert_batch", { batch: [{ mode: "end", req: { end: end("late", T0 + 2000, { exception: "boom" }) } }] });
    expect(r1).toEqual({ res: [{}] });
    expect((await api.json<{ call: Call | null }>("/call/read", { project_id: P, id: "late" })).call).toBeNull();
    await api.json("/call/upsert_batch", { batch: [{ mode: "start", req: { start: start("late", T0 + 1000) } }] });
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "late" });
    expect(call).toMatchObject({ exception: "boom", ended_at: iso(T0 + 2000) });
    expect(call.summary).toMatchObject({ weave: { status: "error", latency_ms: 1000 } });
  });

  it("keeps one call when a batch holds its start and end in either order, and on re-sends", async () => {
    const batch = [
      { mode: "end", req: { end: end("both", T0 + 3500) } },
      { mode: "start", req: { start: start("both", T0 + 3000, { parent_id: "c1" }) } },
    ];
    const res = await api.json<{ res: unknown[] }>("/call/upsert_batch", { batch });
    expect(res).toEqual({ res: [{}, { id: "both", trace_id: "trace-1" }] });
    await api.json("/call/upsert_batch", { batch });
    await api.json("/call/start", { start: start("both", T0 + 3000, { parent_id: "c1" }) });
    const calls = await query({ filter: { call_ids: ["both"] } });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ id: "both", parent_id: "c1", ended_at: iso(T0 + 3500) });
  });

  it("stores a batch's parts of one call, in any order and repeated, as the same parts sent one request each", async () => {
    // Ingest joins an end with its earlier start in one batch into one complete call (ingest/callEvents.ts, `upsertEvents`).
    const parts = (tag: string) => {
      const [a, b, c, other] = ["a", "b", "c", "other"].map((name) => `${tag}-${name}`) as [string, string, string, string];
      return [
        { mode: "start", req: { start: start(a, T0 + 6000, { trace_id: `t-${tag}`, inputs: { n: 1 } }) } },
        { mode: "start", req: { start: start(other, T0 + 6001, { trace_id: `t-${tag}` }) } },
        { mode: "end", req: { end: end(a, T0 + 6100, { output: { first: true } }) } },
        { mode: "end", req: { end: end(a, T0 + 6200, { output: { second: true }, exception: "late" }) } },
        { mode: "start", req: { start: start(b, T0 + 6300, { trace_id: `t-${tag}`, parent_id: a }) } },
        { mode: "start", req: { start: start(b, T0 + 6301, { trace_id: `t-${tag}`, inputs: { repeated: true } }) } },
        { mode: "end", req: { end: end(b, T0 + 6400, { summary: { usage: { m: { prompt_tokens: 2, completion_tokens: 1, requests: 1 } } } }) } },
        { mode: "end", req: { end: end(c, T0 + 6600, { output: { before_start: true } }) } },
        { mode: "start", req: { start: start(c, T0 + 6500, { trace_id: `t-${tag}` }) } },
        { mode: "end", req: { end: end(c, T0 + 6700, { output: { after_start: true } }) } },
      ];
    };
    await api.json("/call/upsert_batch", { batch: parts("one-batch") });
    for (const part of parts("one-each")) await api.json("/call/upsert_batch", { batch: [part] });
    const read = async (tag: string) => {
      const calls = await query({ filter: { trace_ids: [`t-${tag}`] }, sort_by: [{ field: "started_at", direction: "asc" }] });
      return JSON.parse(JSON.stringify(calls).replaceAll(tag, "TAG")) as Call[];
    };
    const [batched, oneEach] = [await read("one-batch"), await read("one-each")];
    expect(batched).toHaveLength(4);
    expect(batched).toEqual(oneEach);
    expect(batched.map((call) => [call.ended_at, call.output, call.exception])).toEqual([
      [iso(T0 + 6200), { second: true }, "late"],
      [null, null, null],
      [iso(T0 + 6400), { answer: "TAG-b" }, null],
      [iso(T0 + 6700), { after_start: true }, null],
    ]);
    expect(batched[2]).toMatchObject({ parent_id: "TAG-a", inputs: { q: "TAG-b" } });
  });

  it("updates the display name and keeps it after a later end", async () => {
    await api.json("/call/start", { start: start("named", T0 + 4000) });
    expect(await api.json("/call/update", { project_id: P, call_id: "named", display_name: "renamed" })).toEqual({});
    await api.json("/call/end", { end: end("named", T0 + 4100) });
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "named" });
    expect(call.display_name).toBe("renamed");
    expect(call.summary).toMatchObject({ weave: { status: "success", trace_name: "renamed" } });
  });

  it("shows a running call as running, with no end fields", async () => {
    await api.json("/call/start", { start: start("running", T0 + 5000, { trace_id: "trace-run" }) });
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "running" });
    expect(call).toMatchObject({ ended_at: null, output: null, summary: { weave: { status: "running", latency_ms: null } } });
  });
});

describe("calls queries", () => {
  const Q = "acme/query";
  beforeAll(async () => {
    const batch = [];
    for (let i = 0; i < 30; i++) {
      const id = `q${String(i).padStart(2, "0")}`;
      batch.push({ mode: "start", req: { start: { project_id: Q, id, op_name: i % 3 === 0 ? "weave:///acme/query/op/tool:v1" : "weave:///acme/query/op/llm:v2", trace_id: `t${i % 5}`, parent_id: i >= 5 ? `q0${i % 5}` : null, thread_id: i % 2 ? "th-odd" : "th-even", turn_id: null, started_at: iso(T0 + i * 1000), attributes: { env: i % 2 ? "prod" : "dev" }, inputs: { n: i, text: `Hello Wörld ${i}`, nested: { k: `v${i % 4}` } } } } });
      if (i % 10 !== 9) batch.push({ mode: "end", req: { end: { project_id: Q, id, ended_at: iso(T0 + i * 1000 + (30 - i) * 10), output: { score: i / 10 }, summary: i === 7 ? { status_counts: { error: 1 } } : {}, exception: i === 4 ? "failed" : null } } });
    }
    await api.json("/call/upsert_batch", { batch });
  });
  const ids = (calls: Call[]) => calls.map((c) => c.id);
  const q = (body: Record<string, unknown>) => api.lines<Call>("/calls/stream_query", { project_id: Q, ...body });

  it("orders by started_at ascending by default and pages with limit/offset", async () => {
    expect(ids(await q({ limit: 3 }))).toEqual(["q00", "q01", "q02"]);
    expect(ids(await q({ limit: 3, offset: 28 }))).toEqual(["q28", "q29"]);
    expect(ids(await q({ limit: 2, sort_by: [{ field: "started_at", direction: "desc" }] }))).toEqual(["q29", "q28"]);
    expect(await q({})).toHaveLength(30);
  });

  it("filters by every CallsFilter field", async () => {
    expect(ids(await q({ filter: { op_names: ["weave:///acme/query/op/tool:*"] } }))).toEqual(["q00", "q03", "q06", "q09", "q12", "q15", "q18", "q21", "q24", "q27"]);
    expect(ids(await q({ filter: { op_names: ["weave:///acme/query/op/tool:v1"], trace_ids: ["t0"] } }))).toEqual(["q00", "q15"]);
    expect(ids(await q({ filter: { trace_roots_only: true } }))).toEqual(["q00", "q01", "q02", "q03", "q04"]);
    expect(ids(await q({ filter: { parent_ids: ["q01"] } }))).toEqual(["q06", "q11", "q16", "q21", "q26"]);
    expect(ids(await q({ filter: { call_ids: ["q05", "q17"] } }))).toEqual(["q05", "q17"]);
    expect(await q({ filter: { thread_ids: ["th-odd"] } })).toHaveLength(15);
    expect(await q({ filter: { wb_user_ids: ["alice"] } })).toHaveLength(30);
    expect(await q({ filter: { svc_user_ids: ["bob"] } })).toHaveLength(0);
  });

  it("evaluates $expr on dotted paths and computed summary fields, and sorts by them", async () => {
    const running = await q({ query: { $expr: { $eq: [{ $getField: "summary.weave.status" }, { $literal: "running" }] } } });
    expect(ids(running)).toEqual(["q09", "q19", "q29"]);
    const errors = await q({ query: { $expr: { $in: [{ $getField: "summary.weave.status" }, [{ $literal: "error" }, { $literal: "descendant_error" }]] } } });
    expect(ids(errors)).toEqual(["q04", "q07"]);
    const big = await q({ query: { $expr: { $gt: [{ $getField: "inputs.n" }, { $literal: 26 }] } } });
    expect(ids(big)).toEqual(["q27", "q28", "q29"]);
    const nested = await q({ query: { $expr: { $and: [{ $eq: [{ $getField: "inputs.nested.k" }, { $literal: "v1" }] }, { $eq: [{ $getField: "attributes.env" }, { $literal: "prod" }] }] } } });
    expect(ids(nested)).toEqual(["q01", "q05", "q09", "q13", "q17", "q21", "q25", "q29"]);
    const text = await q({ query: { $expr: { $contains: { input: { $getField: "inputs.text" }, substr: { $literal: "wörld 2" }, case_insensitive: true } } } });
    expect(ids(text)).toEqual(["q02", "q20", "q21", "q22", "q23", "q24", "q25", "q26", "q27", "q28", "q29"]);
    const byScore = await q({ limit: 3, sort_by: [{ field: "output.score", direction: "desc" }] });
    expect(ids(byScore)).toEqual(["q28", "q27", "q26"]);
    const byLatency = await q({ limit: 2, sort_by: [{ field: "summary.weave.latency_ms", direction: "asc" }] });
    expect(ids(byLatency)).toEqual(["q28", "q27"]);
  });

  it("returns only the asked columns plus the identifying ones", async () => {
    const [call] = await q({ limit: 1, columns: ["inputs"] });
    expect(Object.keys(call!).sort()).toEqual(["id", "inputs", "op_name", "project_id", "started_at", "trace_id"]);
  });

  it("includes storage sizes and usernames when asked", async () => {
    const [root] = await q({ limit: 1, include_storage_size: true, include_total_storage_size: true, include_usernames: true });
    expect(root!.storage_size_bytes).toBeGreaterThan(0);
    expect(root!.total_storage_size_bytes).toBeGreaterThan(root!.storage_size_bytes as number);
    expect(root!.wb_username).toBe("alice");
  });

  it("answers one JSON array for accept: application/json", async () => {
    const res = await api.post("/calls/stream_query", { project_id: Q, limit: 2 }, { accept: "application/json" });
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(((await res.json()) as Call[]).map((c) => c.id)).toEqual(["q00", "q01"]);
  });

  it("counts with query_stats", async () => {
    expect(await api.json("/calls/query_stats", { project_id: Q })).toEqual({ count: 30 });
    expect(await api.json("/calls/query_stats", { project_id: Q, filter: { trace_roots_only: true } })).toEqual({ count: 5 });
    const withSize = await api.json<{ count: number; total_storage_size_bytes: number }>("/calls/query_stats", { project_id: Q, include_total_storage_size: true });
    expect(withSize.total_storage_size_bytes).toBeGreaterThan(0);
  });

  it("refuses unknown fields in a query with 422", async () => {
    const res = await api.post("/calls/stream_query", { project_id: Q, sort_by: [{ field: "no_such_field", direction: "asc" }] });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: unknown[] }).detail).toHaveLength(1);
  });
});

describe("deletes", () => {
  const D = "acme/deletes";
  it("soft-deletes calls with all their descendants, counting the ids asked for", async () => {
    const mk = (id: string, parent: string | null, i: number) => ({ mode: "start", req: { start: { project_id: D, id, op_name: "op", trace_id: "tr", parent_id: parent, started_at: iso(T0 + i), attributes: {}, inputs: {} } } });
    await api.json("/call/upsert_batch", { batch: [mk("root", null, 0), mk("a", "root", 1), mk("a1", "a", 2), mk("a2", "a", 3), mk("b", "root", 4)] });
    expect(await api.json("/calls/delete", { project_id: D, call_ids: ["a"] })).toEqual({ num_deleted: 1 });
    const left = await api.lines<Call>("/calls/stream_query", { project_id: D });
    expect(left.map((c) => c.id)).toEqual(["root", "b"]);
    expect((await api.json<{ call: unknown }>("/call/read", { project_id: D, id: "a1" })).call).toBeNull();
    expect(await api.json("/calls/delete", { project_id: D, call_ids: ["a", "missing"] })).toEqual({ num_deleted: 2 });
    expect(await api.json("/calls/query_stats", { project_id: D })).toEqual({ count: 2 });
  });
});

describe("auth and validation", () => {
  it("answers 401 with WWW-Authenticate without a valid key", async () => {
    const res = await fetch(`${service.url}/calls/query_stats`, { method: "POST", body: JSON.stringify({ project_id: P }), headers: { "content-type": "application/json" } });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Basic/);
    expect((await client(service.url, "wrong-key-000000000000").post("/calls/query_stats", { project_id: P })).status).toBe(401);
  });

  it("answers 403 for another entity's project and writes nothing", async () => {
    const other = client(service.url, KEY_OTHER);
    const res = await other.post("/call/start", { start: { ...start("intruder", T0), project_id: "acme/pipeline" } });
    expect(res.status).toBe(403);
    expect((await other.post("/calls/stream_query", { project_id: P })).status).toBe(403);
    const mixed = await client(service.url, KEY_ACME).post("/call/upsert_batch", { batch: [
      { mode: "start", req: { start: start("ok-part", T0) } },
      { mode: "start", req: { start: { ...start("bad-part", T0), project_id: "other/x" } } },
    ] });
    expect(mixed.status).toBe(403);
    expect((await api.json<{ call: unknown }>("/call/read", { project_id: P, id: "ok-part" })).call).toBeNull();
    expect((await api.json<{ call: unknown }>("/call/read", { project_id: P, id: "intruder" })).call).toBeNull();
  });

  it("answers 422 with the detail shape pointing at the field, and changes nothing", async () => {
    const res = await api.post("/call/start", { start: { ...start("invalid", T0), started_at: "yesterday" } });
    expect(res.status).toBe(422);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await res.json()).toEqual({
      detail: [{ loc: ["body", "start", "started_at"], msg: "must be an ISO 8601 timestamp", type: "custom" }],
      message: "body.start.started_at: must be an ISO 8601 timestamp",
    });
    const missing = await api.post("/call/update", { project_id: P, call_id: "c1" });
    expect(missing.status).toBe(422);
    expect(((await missing.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc).toEqual(["body", "display_name"]);
    expect((await api.json<{ call: unknown }>("/call/read", { project_id: P, id: "invalid" })).call).toBeNull();
  });

  it("ignores unknown fields but names them in X-Ignored-Fields", async () => {
    const res = await api.post("/call/start", { start: { ...start("extra", T0), future_field: 1 }, also: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-ignored-fields")).toBe("start.future_field, also");
  });

  it("answers 400 for malformed JSON and 413 for a body over the limit", async () => {
    const bad = await api.post("/call/start", "{not json");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { detail: { type: string }[] }).detail[0]!.type).toBe("json_invalid");
    const huge = await api.post("/call/start", { start: { ...start("huge", T0), inputs: { blob: "x".repeat(33 * 1024 * 1024) } } });
    expect(huge.status).toBe(413);
  });
});

describe("service endpoints", () => {
  it("health needs no auth and reports ClickHouse and the queue", async () => {
    const res = await fetch(`${service.url}/health`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ok", clickhouse: true, queue: true });
  });

  it("server_info, version and projects_info answer as Weave does", async () => {
    expect(await (await api.get("/server_info")).json()).toEqual({ min_required_weave_python_version: expect.any(String), trace_server_version: "0.1.0" });
    expect(await (await api.get("/version")).json()).toBe("0.1.0");
    expect(await api.json("/service/projects_info", { project_ids: ["acme/a", "other/b"] })).toEqual([{ external_project_id: "acme/a", internal_project_id: "acme/a" }]);
  });

  it("serves the OpenAPI document generated from the contract, and a docs page", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/calls/stream_query", "/calls/query_stats", "/health"]));
    // A process documents what it mounts: the cluster run's service is separate processes, and its query process answers this.
    const ingestDocumented = ["/call/start", "/call/upsert_batch"].map((path) => path in doc.paths);
    expect(ingestDocumented).toEqual(inject("serviceTopology") ? [false, false] : [true, true]);
    const page = await (await fetch(`${service.url}/docs`)).text();
    expect(page).toContain("/calls/stream_query");
  });
});

describe("forwarded addresses", () => {
  it("ignores X-Forwarded-For from a peer that is not a trusted proxy", async () => {
    const res = await api.get("/geolocate", { "x-forwarded-for": "8.8.8.8" });
    expect(((await res.json()) as { ip: string }).ip).toBe("127.0.0.1");
  });
});
