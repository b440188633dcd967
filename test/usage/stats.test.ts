import { beforeAll, describe, expect, it } from "vitest";
import { client, iso, KEY_OTHER, serviceForFile } from "../support/service.js";

/**
 * /calls/stats through HTTP on generated calls (random latencies, errors, running calls,
 * usage of two models, calls outside the range, deleted calls), compared with figures
 * computed here from the generated calls.
 */

type Bucket = Record<string, string | number | null>;
interface StatsRes { start: string; end: string; granularity: number; timezone: string; usage_buckets: Bucket[]; call_buckets: Bucket[] }

const service = serviceForFile();
const api = service.api;
const P = "acme/stats";
const HOUR = 3_600_000;
const S = Date.UTC(2025, 4, 1, 10); // window start
const WINDOW_HOURS = 4; // the last hour gets no calls

interface Gen {
  id: string;
  at: number;
  latency: number | null; // ms; null = running
  error: boolean;
  op: string;
  usage: Record<string, Record<string, number>>;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const CALLS: Gen[] = [];
const DELETED = new Set(["g5", "g17", "g33"]);
{
  const r = rng(42);
  for (let i = 0; i < 240; i++) {
    // Mostly inside the first three hours; some before the start, some at or after the end.
    const at = i < 10 ? S - 1 - Math.floor(r() * HOUR) : i < 20 ? S + WINDOW_HOURS * HOUR + Math.floor(r() * HOUR) : S + Math.floor(r() * 3 * HOUR);
    const running = r() < 0.07;
    const usage: Gen["usage"] = {};
    if (r() < 0.7) usage["gpt-4o"] = { prompt_tokens: 1 + Math.floor(r() * 2000), completion_tokens: Math.floor(r() * 500), requests: 1 };
    if (r() < 0.4) usage["claude-x"] = { input_tokens: 1 + Math.floor(r() * 800), output_tokens: Math.floor(r() * 300), ...(r() < 0.5 ? { total_tokens: 5000 } : {}) };
    // A running call has no summary yet, so no usage.
    CALLS.push({ id: `g${i}`, at, latency: running ? null : 1 + Math.floor(r() * 5000), error: !running && r() < 0.15, op: r() < 0.5 ? "op-a" : "op-b", usage: running ? {} : usage });
  }
  CALLS.push({ id: "edge-start", at: S, latency: 10, error: false, op: "op-a", usage: {} });
}

const nearestRank = (values: number[], p: number): number | null => {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1]!;
};

const live = (filter: (c: Gen) => boolean = () => true, end = S + WINDOW_HOURS * HOUR) => CALLS.filter((c) => !DELETED.has(c.id) && c.at >= S && c.at < end && filter(c));
const inBucket = (c: Gen, origin: number, g: number, i: number) => c.at >= origin + i * g && c.at < origin + (i + 1) * g;

function tokens(u: Record<string, number>) {
  const input = u.prompt_tokens ?? u.input_tokens ?? 0;
  const output = u.completion_tokens ?? u.output_tokens ?? 0;
  return { input, output, total: u.total_tokens ?? input + output };
}

beforeAll(async () => {
  const batch = CALLS.flatMap((c) => [
    { mode: "start", req: { start: { project_id: P, id: c.id, op_name: c.op, trace_id: `t-${c.id}`, started_at: iso(c.at), attributes: {}, inputs: {} } } },
    ...(c.latency === null ? [] : [{ mode: "end", req: { end: { project_id: P, id: c.id, ended_at: iso(c.at + c.latency), exception: c.error ? "boom" : null, summary: { usage: c.usage } } } }]),
  ]);
  await api.json("/call/upsert_batch", { batch });
  await api.json("/calls/delete", { project_id: P, call_ids: [...DELETED] });
  await api.json("/cost/create", { project_id: P, costs: { "gpt-4o": { prompt_token_cost: 2e-6, completion_token_cost: 8e-6, effective_date: "2025-01-01T00:00:00Z" } } });
});

const stats = (body: Record<string, unknown>) => api.json<StatsRes>("/calls/stats", { project_id: P, start: iso(S), end: iso(S + WINDOW_HOURS * HOUR), ...body });

describe("/calls/stats", () => {
  it("buckets calls by hour with counts, errors and latency avg/p50/p95/p99 by default", async () => {
    const res = await stats({});
    expect(res).toMatchObject({ start: iso(S), end: iso(S + WINDOW_HOURS * HOUR), granularity: 3600, timezone: "UTC" });
    expect(res.call_buckets).toHaveLength(WINDOW_HOURS);
    res.call_buckets.forEach((b, i) => {
      const calls = live((c) => inBucket(c, S, HOUR, i));
      const latencies = calls.filter((c) => c.latency !== null).map((c) => c.latency!);
      expect(b.timestamp).toBe(iso(S + i * HOUR));
      expect(b.sum_call_count).toBe(calls.length);
      expect(b.sum_error_count).toBe(calls.filter((c) => c.error).length);
      if (latencies.length === 0) {
        expect(b.avg_latency_ms).toBeNull();
      } else {
        expect(b.avg_latency_ms).toBeCloseTo(latencies.reduce((s, v) => s + v, 0) / latencies.length, 9);
      }
      expect(b.p50_latency_ms).toBe(nearestRank(latencies, 50));
      expect(b.p95_latency_ms).toBe(nearestRank(latencies, 95));
      expect(b.p99_latency_ms).toBe(nearestRank(latencies, 99));
    });
    // The last hour is empty: sums 0, the rest null.
    expect(res.call_buckets[WINDOW_HOURS - 1]).toEqual({ timestamp: iso(S + 3 * HOUR), sum_call_count: 0, sum_error_count: 0, avg_latency_ms: null, p50_latency_ms: null, p95_latency_ms: null, p99_latency_ms: null });
    expect(res.call_buckets.reduce((s, b) => s + (b.sum_call_count as number), 0)).toBe(live().length);
  });

  it("sums tokens per model and bucket (prompt_tokens else input_tokens, total_tokens else their sum)", async () => {
    const res = await stats({});
    const want: Bucket[] = [];
    for (let i = 0; i < WINDOW_HOURS; i++) {
      for (const model of ["claude-x", "gpt-4o"]) {
        const calls = live((c) => inBucket(c, S, HOUR, i) && !!c.usage[model]);
        if (calls.length === 0) continue;
        const t = calls.map((c) => tokens(c.usage[model]!));
        want.push({
          timestamp: iso(S + i * HOUR), model,
          sum_input_tokens: t.reduce((s, x) => s + x.input, 0),
          sum_output_tokens: t.reduce((s, x) => s + x.output, 0),
          sum_total_tokens: t.reduce((s, x) => s + x.total, 0),
        });
      }
    }
    expect(res.usage_buckets).toEqual(want);
  });

  it("computes the asked aggregations and percentiles, and costs with the project's prices (0 without a price)", async () => {
    const res = await stats({
      usage_metrics: [{ metric: "total_tokens", aggregations: ["max", "count", "min"], percentiles: [50, 90] }, { metric: "input_cost" }, { metric: "total_cost", aggregations: ["sum", "avg"] }],
      call_metrics: [{ metric: "latency_ms", aggregations: ["min", "max", "count", "sum"] }, { metric: "error_count", aggregations: ["avg"] }],
    });
    for (const b of res.usage_buckets) {
      const i = (Date.parse(b.timestamp as string) - S) / HOUR;
      const model = b.model as string;
      const calls = live((c) => inBucket(c, S, HOUR, i) && !!c.usage[model]);
      const totals = calls.map((c) => tokens(c.usage[model]!).total);
      const price = model === "gpt-4o" ? { p: 2e-6, c: 8e-6 } : { p: 0, c: 0 };
      const inputCosts = calls.map((c) => tokens(c.usage[model]!).input * price.p);
      const totalCosts = calls.map((c) => tokens(c.usage[model]!).input * price.p + tokens(c.usage[model]!).output * price.c);
      expect(Object.keys(b).sort()).toEqual(["avg_total_cost", "count_total_tokens", "max_total_tokens", "min_total_tokens", "model", "p50_total_tokens", "p90_total_tokens", "sum_input_cost", "sum_total_cost", "timestamp"]);
      expect(b.max_total_tokens).toBe(Math.max(...totals));
      expect(b.min_total_tokens).toBe(Math.min(...totals));
      expect(b.count_total_tokens).toBe(totals.length);
      expect(b.p50_total_tokens).toBe(nearestRank(totals, 50));
      expect(b.p90_total_tokens).toBe(nearestRank(totals, 90));
      expect(b.sum_input_cost).toBeCloseTo(inputCosts.reduce((s, v) => s + v, 0), 12);
      expect(b.sum_total_cost).toBeCloseTo(totalCosts.reduce((s, v) => s + v, 0), 12);
      expect(b.avg_total_cost).toBeCloseTo(totalCosts.reduce((s, v) => s + v, 0) / totalCosts.length, 12);
    }
    res.call_buckets.forEach((b, i) => {
      const calls = live((c) => inBucket(c, S, HOUR, i));
      const latencies = calls.filter((c) => c.latency !== null).map((c) => c.latency!);
      expect(b).toEqual({
        timestamp: iso(S + i * HOUR),
        min_latency_ms: latencies.length ? Math.min(...latencies) : null,
        max_latency_ms: latencies.length ? Math.max(...latencies) : null,
        count_latency_ms: latencies.length,
        sum_latency_ms: latencies.length ? latencies.reduce((s, v) => s + v, 0) : null,
        avg_error_count: calls.length ? expect.closeTo(calls.filter((c) => c.error).length / calls.length, 12) : null,
      });
    });
  });

  it("applies the calls filter, and [] metrics ask for nothing", async () => {
    const res = await stats({ filter: { op_names: ["op-a"] }, usage_metrics: [], call_metrics: [{ metric: "call_count" }] });
    expect(res.usage_buckets).toEqual([]);
    expect(res.call_buckets.map((b) => b.sum_call_count)).toEqual([0, 1, 2, 3].map((i) => live((c) => c.op === "op-a" && inBucket(c, S, HOUR, i)).length));
  });

  it("chooses the granularity from the range, and aligns buckets in the timezone", async () => {
    expect((await stats({ end: iso(S + HOUR) })).granularity).toBe(300);
    expect((await stats({ end: iso(S + 2 * 24 * HOUR) })).granularity).toBe(6 * 3600);
    expect((await stats({ end: iso(S + 20 * 24 * HOUR) })).granularity).toBe(86400);
    const kolkata = await stats({ timezone: "Asia/Kolkata", granularity: 3600, usage_metrics: [] });
    expect(kolkata.timezone).toBe("Asia/Kolkata");
    expect(kolkata.call_buckets.map((b) => b.timestamp)).toEqual([0, 1, 2, 3, 4].map((i) => iso(S - HOUR / 2 + i * HOUR)));
    expect(kolkata.call_buckets.map((b) => b.sum_call_count)).toEqual([0, 1, 2, 3, 4].map((i) => live((c) => inBucket(c, S - HOUR / 2, HOUR, i)).length));
    const ny = await stats({ timezone: "America/New_York", granularity: 86400, end: iso(S + 48 * HOUR), call_metrics: [{ metric: "call_count" }], usage_metrics: [] });
    // 10:00 UTC is 06:00 in New York (EDT, UTC−4): the day starts at 04:00 UTC.
    expect(ny.call_buckets.map((b) => b.timestamp)).toEqual([iso(S - 6 * HOUR), iso(S + 18 * HOUR), iso(S + 42 * HOUR)]);
    expect(ny.call_buckets.map((b) => b.sum_call_count)).toEqual([0, 1, 2].map((i) => live((c) => inBucket(c, S - 6 * HOUR, 24 * HOUR, i), S + 48 * HOUR).length));
  });

  it("raises a granularity that would give more than 10,000 buckets", async () => {
    const res = await stats({ granularity: 1, end: iso(S + 24 * HOUR), usage_metrics: [], call_metrics: [{ metric: "call_count" }] });
    expect(res.granularity).toBe(9);
    expect(res.call_buckets.length).toBeLessThanOrEqual(10_000);
    expect(res.call_buckets.reduce((s, b) => s + (b.sum_call_count as number), 0)).toBe(live(() => true, S + 24 * HOUR).length);
  });

  it("refuses a range over 31 days, an end before the start and an unknown timezone with 422", async () => {
    const DAY = 24 * HOUR;
    expect((await stats({ end: iso(S + 31 * DAY), usage_metrics: [], call_metrics: [] })).granularity).toBe(86400);
    const cases: [Record<string, unknown>, (string | number)[]][] = [
      [{ end: iso(S + 31 * DAY + 1000) }, ["body", "end"]],
      [{ start: iso(Date.now() - 40 * DAY), end: null }, ["body", "start"]],
      [{ end: iso(S) }, ["body", "end"]],
      [{ timezone: "Mars/Olympus" }, ["body", "timezone"]],
      [{ granularity: 0 }, ["body", "granularity"]],
      [{ call_metrics: [{ metric: "tokens" }] }, ["body", "call_metrics", 0, "metric"]],
      [{ usage_metrics: [{ metric: "input_tokens", percentiles: [101] }] }, ["body", "usage_metrics", 0, "percentiles", 0]],
    ];
    for (const [body, loc] of cases) {
      const res = await api.post("/calls/stats", { project_id: P, start: iso(S), end: iso(S + HOUR), ...body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      const detail = ((await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] }).detail;
      expect(detail[0]!.loc).toEqual(loc);
      expect(typeof detail[0]!.msg).toBe("string");
    }
    expect((await client(service.url, KEY_OTHER).post("/calls/stats", { project_id: P, start: iso(S) })).status).toBe(403);
  });
});
