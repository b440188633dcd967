import { describe, expect, it } from "vitest";
import { basic, client, iso, serviceForFile, waitStored } from "../support/service.js";

/** `/metrics` after traffic: each named metric present, counts equal to the requests made; request ids. */
const T = Date.UTC(2026, 10, 24);
const start = (project: string, id: string) => ({ project_id: project, id, op_name: "op", trace_id: "t", started_at: iso(T), attributes: {}, inputs: {} });

type Samples = { name: string; labels: Record<string, string>; value: number }[];

function parse(text: string): Samples {
  const samples: Samples = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples of `name` whose labels include `labels`; null when there is none. */
function value(samples: Samples, name: string, labels: Record<string, string> = {}): number | null {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found.length === 0 ? null : found.reduce((sum, s) => sum + s.value, 0);
}

async function metrics(url: string): Promise<Samples> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return parse(await res.text());
}

const delta = (before: Samples, after: Samples, name: string, labels: Record<string, string> = {}) => (value(after, name, labels) ?? 0) - (value(before, name, labels) ?? 0);

describe("/metrics", () => {
  const svc = serviceForFile();

  it("counts requests by route, method, status and role, times them, and counts rejects", async () => {
    const P = "acme/metrics";
    const before = await metrics(svc.url);
    for (let i = 0; i < 3; i++) expect((await svc.api.post("/call/start", { start: start(P, `c${i}`) })).status).toBe(200);
    expect((await svc.api.post("/call/upsert_batch", { batch: [0, 1, 2, 3].map((i) => ({ mode: "start", req: { start: start(P, `b${i}`) } })) })).status).toBe(200);
    expect((await client(svc.url, "wrong-key-0123456789abcdef").post("/call/start", { start: start(P, "x") })).status).toBe(401);
    expect((await svc.api.post("/call/start", { start: { project_id: P } })).status).toBe(422);
    expect((await svc.api.post("/call/start", { start: start("other/p", "y") })).status).toBe(403);
    const after = await metrics(svc.url);

    const route = { route: "/call/start", method: "POST", role: "all" };
    expect(delta(before, after, "http_requests_total", { ...route, status: "200" })).toBe(3);
    expect(delta(before, after, "http_requests_total", { ...route, status: "401" })).toBe(1);
    expect(delta(before, after, "http_requests_total", { ...route, status: "422" })).toBe(1);
    expect(delta(before, after, "http_requests_total", { ...route, status: "403" })).toBe(1);
    expect(delta(before, after, "http_requests_total", { route: "/call/upsert_batch", status: "200" })).toBe(1);
    expect(delta(before, after, "http_request_duration_seconds_count", route)).toBe(6);
    expect(delta(before, after, "http_request_duration_seconds_sum", route)).toBeGreaterThan(0);
    expect(delta(before, after, "http_request_duration_seconds_bucket", { ...route, le: "+Inf" })).toBe(6);
    expect(delta(before, after, "http_rejects_total", { route: "/call/start", status: "401", role: "all" })).toBe(1);
    expect(delta(before, after, "http_rejects_total", { route: "/call/start", status: "422" })).toBe(1);
    expect(delta(before, after, "http_rejects_total", { route: "/call/start", status: "403" })).toBe(1);
    expect(delta(before, after, "http_rejects_total", { status: "200" })).toBe(0);
    // The /metrics request before was counted under its Express route.
    expect(value(after, "http_requests_total", { route: "/metrics", status: "200" })).toBeGreaterThanOrEqual(1);
  });

  it("shows the worker's batches, inserts and rows written (from the log's consumer thread), and the queue's state", async () => {
    const P = "acme/metrics-rows";
    await waitStored(svc.url); // the writes of the tests before are counted before this one starts
    const before = await metrics(svc.url);
    for (let i = 0; i < 5; i++) expect((await svc.api.post("/call/start", { start: start(P, `r${i}`) })).status).toBe(200);
    await waitStored(svc.url);
    const after = await metrics(svc.url);
    const events = { topic: "tracehouse.events", role: "all" };
    expect(delta(before, after, "worker_batch_events_sum", events)).toBe(5);
    expect(delta(before, after, "worker_batch_events_count", events)).toBeGreaterThanOrEqual(1);
    expect(delta(before, after, "worker_batch_seconds_count", events)).toBe(delta(before, after, "worker_batch_events_count", events));
    expect(delta(before, after, "clickhouse_rows_written_total", { table: "calls" })).toBe(5);
    expect(delta(before, after, "clickhouse_rows_written_total", { table: "call_index" })).toBe(5);
    expect(delta(before, after, "clickhouse_insert_seconds_count", { table: "calls" })).toBeGreaterThanOrEqual(1);
    expect(delta(before, after, "clickhouse_query_seconds_count")).toBeGreaterThan(0);
    expect(value(after, "ingest_pending_events", { topic: "tracehouse.events" })).toBe(0);
    expect(value(after, "queue_log_backlog_bytes", { topic: "tracehouse.events" })).toBe(0);
    // Each series once: the consumer thread's and this thread's values are summed, not listed twice.
    const keys = after.map((s) => `${s.name}${JSON.stringify(s.labels)}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(value(after, "process_resident_memory_bytes", { role: "all" })).toBeGreaterThan(10 * 1024 * 1024);
  });

  it("gives every answer an X-Request-Id: the caller's when it is a plain token, else a new one", async () => {
    const given = await svc.api.post("/call/start", { start: start("acme/rid", "a") }, { "X-Request-Id": "req-42.abc" });
    expect(given.headers.get("x-request-id")).toBe("req-42.abc");
    const refused = await fetch(`${svc.url}/call/start`, { method: "POST", headers: { authorization: basic("nope-nope-nope-nope-nope"), "content-type": "application/json" }, body: "{}" });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const odd = await fetch(`${svc.url}/health`, { headers: { "X-Request-Id": "has spaces; and=more" } });
    expect(odd.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const twice = await Promise.all([fetch(`${svc.url}/health`), fetch(`${svc.url}/health`)]);
    expect(new Set(twice.map((r) => r.headers.get("x-request-id"))).size).toBe(2);
  });
});
