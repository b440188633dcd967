import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { FeedbackRepository } from "../../services/store/feedback/feedbackRepository.js";
import { checkAll } from "../../services/store/feedback/validate.js";
import { optimizeFinal, storeOn } from "../support/database.js";
import { serviceForFile } from "../support/service.js";
import type { Clock } from "../../services/times.js";

/**
 * /feedback/stats against figures computed here from the generated feedback. Feedback is
 * written in the past through the repository with a clock of the test's choosing (the
 * API stamps server time), then read through HTTP.
 */

const service = serviceForFile();
const api = service.api;
let store: ClickHouseStore;
const S = "acme/fbstats";
const START = Date.UTC(2026, 2, 10, 0, 0, 0) * 1000;
const HOUR = 3600 * 1_000_000;
const END = START + 72 * HOUR;

/** Returns the queued times, one per written row. */
class ScriptedClock implements Clock {
  readonly times: number[] = [];
  nowMicros(): number {
    const t = this.times.shift();
    if (t === undefined) throw new Error("no time scripted");
    return t;
  }
}

interface Item {
  at: number;
  type: string;
  trigger: string;
  score: number | string | undefined;
  passed: boolean | undefined;
  label: string | undefined;
}

// A small deterministic generator, so a failure can be replayed.
let seed = 42;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;

const items: Item[] = [];
for (let i = 0; i < 400; i++) {
  items.push({
    at: Math.floor(START - HOUR + random() * (74 * HOUR)),
    type: i % 7 === 0 ? "other" : "wandb.runnable.judge",
    trigger: `weave:///${S}/object/monitor:${pick(["v1", "v2"])}`,
    score: pick([Math.round(random() * 1000) / 100, Math.round(random() * 100), -3.5, "n/a", undefined]),
    passed: pick([true, false, true, undefined]),
    label: pick(["good", "bad", "meh", "good", undefined]),
  });
}
items.push({ at: START, type: "wandb.runnable.judge", trigger: `weave:///${S}/object/monitor:v1`, score: 5, passed: true, label: "edge" });
items.push({ at: END, type: "wandb.runnable.judge", trigger: `weave:///${S}/object/monitor:v1`, score: 5, passed: true, label: "past-end" });

beforeAll(async () => {
  store = await storeOn(service.database);
  const clock = new ScriptedClock();
  const repo = new FeedbackRepository(store, clock);
  const reqs = items.map((item, i) => {
    const output: Record<string, unknown> = {};
    if (item.score !== undefined) output.score = item.score;
    if (item.passed !== undefined) output.passed = item.passed;
    if (item.label !== undefined) output.label = item.label;
    return { project_id: S, weave_ref: `weave:///${S}/call/c${i % 50}`, feedback_type: item.type, payload: { output }, trigger_ref: item.trigger };
  });
  clock.times.push(...items.map((item) => item.at));
  await repo.create(checkAll(reqs, (i) => ["items", i]), "alice");
});
afterAll(async () => {
  await store.close();
});

const iso = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString().replace("Z", `${String(micros % 1000).padStart(3, "0")}Z`);

/** The figures the service should give for a set of items (see stats.ts for the rules). */
function expected(group: Item[]) {
  const scores = group.map((i) => i.score).filter((s): s is number => typeof s === "number").sort((a, b) => a - b);
  const passed = group.map((i) => i.passed).filter((p): p is boolean => p !== undefined);
  const labels = group.map((i) => i.label).filter((l): l is string => l !== undefined);
  const percentile = (p: number) => (scores.length === 0 ? null : scores[Math.min(scores.length - 1, Math.floor((p / 100) * scores.length))]!);
  const counts: Record<string, number> = {};
  for (const l of labels) counts[l] = (counts[l] ?? 0) + 1;
  const trues = passed.filter(Boolean).length;
  return {
    output_score: {
      avg: scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : null,
      sum: scores.length ? scores.reduce((a, b) => a + b, 0) : null,
      min: scores.length ? scores[0]! : null,
      max: scores.length ? scores[scores.length - 1]! : null,
      count: scores.length,
      p0: percentile(0),
      p50: percentile(50),
      p95: percentile(95),
      p99_5: percentile(99.5),
      p100: percentile(100),
    },
    output_passed: { count_true: trues, count_false: passed.length - trues, count: passed.length, avg: passed.length ? trues / passed.length : null },
    output_label: { count: labels.length, count_distinct: Object.keys(counts).length, counts },
  };
}

function expectFigures(actual: Record<string, unknown>, want: Record<string, unknown>, where: string) {
  for (const [key, value] of Object.entries(want)) {
    if (typeof value === "number" && !Number.isInteger(value)) expect(actual[key], `${where} ${key}`).toBeCloseTo(value, 6);
    else expect(actual[key], `${where} ${key}`).toEqual(value);
  }
}

const METRICS = [
  { json_path: "output.score", value_type: "numeric", aggregations: ["avg", "sum", "min", "max", "count"], percentiles: [0, 50, 95, 99.5, 100] },
  { json_path: "output.passed", value_type: "boolean", aggregations: ["count_true", "count_false", "count", "avg"] },
  { json_path: "output.label", value_type: "categorical", aggregations: ["count", "count_distinct", "counts"] },
];

describe("feedback stats", () => {
  it("gives every bucket's count and aggregates, and the window's, as computed from the raw feedback", async () => {
    const g = 6 * HOUR;
    const res = await api.json<{ start: string; end: string; granularity: number; timezone: string; buckets: Record<string, unknown>[]; window_stats: Record<string, Record<string, unknown>> }>(
      "/feedback/stats",
      { project_id: S, start: iso(START), end: iso(END), feedback_type: "wandb.runnable.judge", granularity: 21600, metrics: METRICS },
    );
    expect(Object.keys(res)).toEqual(["start", "end", "granularity", "timezone", "buckets", "window_stats"]);
    expect(res).toMatchObject({ start: "2026-03-10T00:00:00.000000Z", end: "2026-03-13T00:00:00.000000Z", granularity: 21600, timezone: "UTC" });
    expect(res.buckets).toHaveLength(12);
    const judged = items.filter((i) => i.type === "wandb.runnable.judge" && i.at >= START && i.at < END);
    res.buckets.forEach((bucket, b) => {
      const from = START + b * g;
      const group = judged.filter((i) => i.at >= from && i.at < from + g);
      expect(bucket.timestamp).toBe(iso(from));
      expect(bucket.count, `bucket ${b}`).toBe(group.length);
      const want = expected(group);
      for (const [slug, figures] of Object.entries(want)) {
        expectFigures(Object.fromEntries(Object.entries(figures).map(([agg]) => [agg, bucket[`${agg}_${slug}`]])), figures, `bucket ${b} ${slug}`);
      }
      expect(Object.keys(bucket)).toHaveLength(2 + 10 + 4 + 3);
    });
    const whole = expected(judged);
    for (const [slug, figures] of Object.entries(whole)) expectFigures(res.window_stats[slug]!, figures, `window ${slug}`);
    expect(res.window_stats.output_label!.counts).toMatchObject({ edge: 1 });
    expect(res.window_stats.output_label!.counts).not.toHaveProperty("past-end");
  });

  it("filters by trigger_ref, exactly or across versions", async () => {
    const count = async (trigger_ref: string) =>
      (await api.json<{ window_stats: { output_score: { count: number } } }>("/feedback/stats", {
        project_id: S, start: iso(START), end: iso(END), trigger_ref, metrics: [{ json_path: "output.score", aggregations: ["count"] }],
      })).window_stats.output_score.count;
    const scored = (pred: (i: Item) => boolean) => items.filter((i) => i.at >= START && i.at < END && typeof i.score === "number" && pred(i)).length;
    expect(await count(`weave:///${S}/object/monitor:v1`)).toBe(scored((i) => i.trigger.endsWith(":v1")));
    expect(await count(`weave:///${S}/object/monitor:*`)).toBe(scored(() => true));
  });

  it("aligns buckets to the timezone, chooses a granularity when none is given, and defaults the aggregations", async () => {
    const day = 24 * HOUR;
    const res = await api.json<{ granularity: number; buckets: { timestamp: string; count: number }[] }>("/feedback/stats", {
      project_id: S, start: iso(START), end: iso(END), timezone: "Asia/Kolkata", granularity: 86400,
    });
    // 00:00 UTC is 05:30 in Kolkata: days start at 18:30 UTC.
    const origin = START - 5.5 * HOUR;
    expect(res.buckets.map((b) => b.timestamp)).toEqual([0, 1, 2, 3].map((d) => iso(origin + d * day)));
    expect(res.buckets.map((b) => b.count)).toEqual(
      [0, 1, 2, 3].map((d) => items.filter((i) => i.at >= Math.max(START, origin + d * day) && i.at < Math.min(END, origin + (d + 1) * day)).length),
    );
    const auto = await api.json<{ granularity: number; buckets: Record<string, unknown>[]; window_stats: Record<string, Record<string, unknown>> }>("/feedback/stats", {
      project_id: S, start: iso(START), end: iso(END), metrics: [{ json_path: "output.score" }, { json_path: "output.passed", value_type: "boolean" }, { json_path: "output.label", value_type: "categorical" }],
    });
    // The same rule as /calls/stats: a range of up to 3 days gets 6-hour buckets.
    expect(auto.granularity).toBe(21600);
    expect(auto.buckets).toHaveLength(12);
    expect(Object.keys(auto.window_stats.output_score!)).toEqual(["avg", "min", "max"]);
    expect(Object.keys(auto.window_stats.output_passed!)).toEqual(["count_true", "count_false"]);
    expect(Object.keys(auto.window_stats.output_label!)).toEqual(["counts"]);
    const fine = await api.json<{ granularity: number; buckets: unknown[] }>("/feedback/stats", { project_id: S, start: iso(START), end: iso(END), granularity: 1 });
    // 72 h in 1 s buckets would be 259,200 buckets: raised to the smallest width that gives at most 10,000.
    expect(fine.granularity).toBe(26);
    expect(fine.buckets).toHaveLength(Math.ceil((72 * 3600) / 26));
  });

  it("refuses a bad range, timezone, aggregation or duplicate metric with 422", async () => {
    const bad = [
      { start: iso(END), end: iso(START) },
      { start: iso(START), end: iso(END), timezone: "Mars/Olympus" },
      { start: iso(START), end: iso(END), metrics: [{ json_path: "output.score", aggregations: ["count_true"] }] },
      { start: iso(START), end: iso(END), metrics: [{ json_path: "output.score" }, { json_path: "output_score" }] },
      { start: iso(START), end: iso(END), metrics: [{ json_path: "output.sc'ore" }] },
      { start: "yesterday" },
      { start: iso(START), end: iso(START + 31 * 24 * HOUR + 1) },
    ];
    for (const body of bad) expect((await api.post("/feedback/stats", { project_id: S, ...body })).status, JSON.stringify(body)).toBe(422);
  });
});

describe("deletes under merges", () => {
  it("keeps purged and replaced feedback gone before and after ClickHouse merges the parts", async () => {
    const M = "acme/fbmerge";
    const mk = (v: number) => api.json<{ id: string }>("/feedback/create", { project_id: M, weave_ref: `weave:///${M}/call/m`, feedback_type: "thumbs", payload: { v } });
    const [a, b, c] = [await mk(1), await mk(2), await mk(3)];
    await api.json("/feedback/purge", { project_id: M, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: a.id }] } } });
    const d = await api.json<{ id: string }>("/feedback/replace", { project_id: M, feedback_id: b.id, weave_ref: `weave:///${M}/call/m`, feedback_type: "thumbs", payload: { v: 4 } });
    const live = async () => (await api.json<{ result: { id: string }[] }>("/feedback/query", { project_id: M, fields: ["id"] })).result.map((f) => f.id);
    expect(await live()).toEqual([c.id, d.id]);
    await optimizeFinal(store, "feedback");
    expect(await live()).toEqual([c.id, d.id]);
    const e = await mk(5);
    await api.json("/feedback/purge", { project_id: M, query: { $expr: { $eq: [{ $getField: "id" }, { $literal: c.id }] } } });
    expect(await live()).toEqual([d.id, e.id]);
  });
});
