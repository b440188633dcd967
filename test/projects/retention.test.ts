import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { partsSource } from "../../services/store/clusterSchema.js";
import { storeOn } from "../support/database.js";
import { untilRead } from "../support/polling.js";
import { basic, client, iso, KEY_ACME, serviceForFile, startTestService, waitStored } from "../support/service.js";

/** The worker's retention job and ClickHouse's mutations take their time. */
const SLOW = { timeoutMs: 120_000 };

/**
 * Per-project retention through HTTP: the settings operations, every read of an expired call
 * (calls, one call, counts, threads, usage, stats, feedback) after a change, the server's
 * default, and the worker's retention job deleting the rows (counted in ClickHouse).
 */

interface Settings { retention_days: number | null; effective_retention_days: number | null; storage_bytes: number }

const DAY = 86_400_000;
const OLD = Date.now() - 400 * DAY;
const RECENT = Date.now() - 2 * DAY;
// The job runs every 2 s here (it also runs at start and after each settings change).
const service = serviceForFile({ RETENTION_INTERVAL_MS: "2000" });
const P = "acme/retention";

const settingsUrl = (project: string) => `${service.url}/projects/${project}/settings`;
const readSettings = async (project = P, url = settingsUrl(project)): Promise<Response> => fetch(url, { headers: { authorization: basic(KEY_ACME) } });
const putSettings = (body: unknown, project = P, url = settingsUrl(project)): Promise<Response> =>
  fetch(url, { method: "PUT", headers: { authorization: basic(KEY_ACME), "content-type": "application/json" }, body: JSON.stringify(body) });

/** A finished turn call of its own thread, with usage, and a feedback on it. */
async function writeCall(baseUrl: string, project: string, id: string, startedMs: number): Promise<void> {
  const c = client(baseUrl);
  const start = { project_id: project, id, trace_id: `t-${id}`, op_name: "chat", thread_id: `th-${id}`, turn_id: id, started_at: iso(startedMs), attributes: {}, inputs: { q: id } };
  const usage = { "gpt-4o": { prompt_tokens: 10, completion_tokens: 5, requests: 1 } };
  const end = { project_id: project, id, ended_at: iso(startedMs + 1000), output: "a", summary: { usage } };
  await c.json("/call/upsert_batch", { batch: [{ mode: "start", req: { start } }, { mode: "end", req: { end } }] });
  await c.json("/feedback/create", { project_id: project, weave_ref: `weave:///${project}/call/${id}`, feedback_type: "custom", payload: { note: id } });
}

const OLD_SPAN = "0123456789abcdef";

/** An OTLP log record of span OLD_SPAN, timed at OLD. */
async function writeOldLogRecord(baseUrl: string, project: string): Promise<void> {
  const record = { timeUnixNano: `${OLD}000000`, traceId: "0123456789abcdef0123456789abcdef", spanId: OLD_SPAN, eventName: "app.note", body: { stringValue: "old" } };
  const res = await fetch(`${baseUrl}/otel/v1/logs`, {
    method: "POST",
    headers: { authorization: basic(KEY_ACME), "content-type": "application/json", project_id: project },
    body: JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [record] }] }] }),
  });
  expect(res.status).toBe(200);
}

/** What each read answers of the project's calls: ids per read path. */
async function visible(project = P, baseUrl = service.url) {
  const c = client(baseUrl);
  const calls = (await c.lines<{ id: string }>("/calls/stream_query", { project_id: project })).map((r) => r.id).sort();
  const count = (await c.json<{ count: number }>("/calls/query_stats", { project_id: project })).count;
  const oldRead = (await c.json<{ call: { id: string } | null }>("/call/read", { project_id: project, id: "old" })).call?.id ?? null;
  const threads = (await c.lines<{ thread_id: string }>("/threads/stream_query", { project_id: project })).map((t) => t.thread_id).sort();
  const feedback = (await c.json<{ result: { weave_ref: string }[] }>("/feedback/query", { project_id: project })).result.map((f) => f.weave_ref.split("/").pop()).sort();
  const usage = await c.json<{ call_usage: Record<string, Record<string, unknown>> }>("/calls/usage", { project_id: project, call_ids: ["old", "new"] });
  const traceUsage = await c.json<{ call_usage: Record<string, unknown> }>("/trace/usage", { project_id: project });
  // The old call's day (a stats range spans at most 31 days).
  const logRecords = (await c.json<{ records: unknown[] }>("/call/log_records", { project_id: project, call_id: OLD_SPAN })).records.length;
  const stats = await c.json<{ call_buckets: Record<string, unknown>[] }>("/calls/stats", { project_id: project, start: iso(OLD - DAY), end: iso(OLD + DAY), granularity: 3600 * 24 });
  return {
    calls,
    count,
    oldRead,
    threads,
    feedback,
    usage: Object.keys(usage.call_usage).filter((id) => Object.keys(usage.call_usage[id]!).length > 0).sort(),
    traceUsage: Object.keys(traceUsage.call_usage).sort(),
    logRecords,
    oldStats: stats.call_buckets.reduce((n, b) => n + Number(b.sum_call_count), 0),
  };
}

const BOTH = { calls: ["new", "old"], count: 2, oldRead: "old", threads: ["th-new", "th-old"], feedback: ["new", "old"], usage: ["new", "old"], traceUsage: ["new", "old"], oldStats: 1, logRecords: 1 };
const RECENT_ONLY = { calls: ["new"], count: 1, oldRead: null, threads: ["th-new"], feedback: ["new"], usage: ["new"], traceUsage: ["new"], oldStats: 0, logRecords: 0 };

/** Rows of the project's call `id` (and what derives from it) still stored, per table. */
async function storedRows(store: ClickHouseStore, project: string, id: string): Promise<Record<string, number>> {
  const pb = new ParamBuilder();
  const p = pb.str(project);
  const i = pb.str(id);
  const [row] = await store.rows<Record<string, string>>("test_stored_rows", {
    sql: `SELECT (SELECT count() FROM calls WHERE project_id = ${p} AND id = ${i}) AS calls,
                 (SELECT count() FROM call_index WHERE project_id = ${p} AND id = ${i}) AS call_index,
                 (SELECT count() FROM feedback WHERE project_id = ${p} AND call_id = ${i}) AS feedback,
                 (SELECT count() FROM thread_turns WHERE project_id = ${p} AND turn_id = ${i}) AS thread_turns,
                 (SELECT count() FROM threads WHERE project_id = ${p} AND thread_id = ${pb.str(`th-${id}`)}) AS threads,
                 (SELECT count() FROM otel_log_records WHERE project_id = ${p} AND span_id = ${pb.str(id === "old" ? OLD_SPAN : id)}) AS otel_log_records`,
    params: pb.params,
  });
  return Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]));
}


const NONE = { calls: 0, call_index: 0, feedback: 0, thread_turns: 0, threads: 0, otel_log_records: 0 };
const allZero = (rows: Record<string, number>) => Object.values(rows).every((n) => n === 0);

describe("project settings", () => {
  it("answers the project's own retention, the effective one and its storage", async () => {
    const res = await readSettings("acme/untouched");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ retention_days: null, effective_retention_days: null, storage_bytes: 0 });
  });

  it("refuses a retention that is not a whole number of days ≥ 1 (422, nothing changed)", async () => {
    expect((await putSettings({ retention_days: 7 }, "acme/strict")).status).toBe(200);
    for (const [body, loc] of [
      [{ retention_days: 0 }, ["body", "retention_days"]],
      [{ retention_days: -3 }, ["body", "retention_days"]],
      [{ retention_days: 1.5 }, ["body", "retention_days"]],
      [{ retention_days: "30" }, ["body", "retention_days"]],
      [{}, ["body", "retention_days"]],
    ] as const) {
      const res = await putSettings(body, "acme/strict");
      expect(res.status, JSON.stringify(body)).toBe(422);
      const detail = ((await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] }).detail;
      expect(detail[0]!.loc).toEqual(loc);
      expect(typeof detail[0]!.msg).toBe("string");
    }
    expect(await (await readSettings("acme/strict")).json()).toMatchObject({ retention_days: 7, effective_retention_days: 7 });
  });
});

describe("a project's retention", () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = await storeOn(service.database);
    await writeCall(service.url, P, "old", OLD);
    await writeCall(service.url, P, "new", RECENT);
    await writeOldLogRecord(service.url, P);
  });
  afterAll(async () => store.close());

  it("keeps everything while no retention applies, and counts the project's storage", async () => {
    expect(await visible()).toEqual(BOTH);
    const settings = (await (await readSettings()).json()) as Settings;
    expect(settings).toMatchObject({ retention_days: null, effective_retention_days: null });
    expect(settings.storage_bytes).toBeGreaterThan(0);
  });

  it("leaves calls older than it out of every read once set, and the worker's job deletes their rows", async () => {
    const before = (await (await readSettings()).json()) as Settings;
    const res = await putSettings({ retention_days: 30 });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Settings;
    expect(answer).toMatchObject({ retention_days: 30, effective_retention_days: 30 });
    // The process that changed it reads with the new retention at once (others within RETENTION_REFRESH_MS).
    expect(await visible()).toEqual(RECENT_ONLY);

    const left = await untilRead(() => storedRows(store, P, "old"), allZero, SLOW);
    expect(left).toEqual(NONE);
    expect(await storedRows(store, P, "new")).toEqual({ calls: 1, call_index: 1, feedback: 1, thread_turns: 1, threads: 1, otel_log_records: 0 });
    expect(await visible()).toEqual(RECENT_ONLY);
    const after = await untilRead(async () => ((await (await readSettings()).json()) as Settings).storage_bytes, (bytes) => bytes < before.storage_bytes, SLOW);
    expect(after).toBeLessThan(before.storage_bytes);
  });

  it("falls back to the server's default when set back to null", async () => {
    const res = await putSettings({ retention_days: null });
    expect(await res.json()).toMatchObject({ retention_days: null, effective_retention_days: null });
    expect(await visible()).toEqual(RECENT_ONLY);
  });
});

/** The months (`YYYYMM`) that `calls` holds parts of (on a cluster, on any shard). */
async function callMonths(store: ClickHouseStore): Promise<string[]> {
  const parts = partsSource(store.cluster);
  const pb = new ParamBuilder();
  const rows = await store.rows<{ partition: string }>("test_call_months", {
    sql: `SELECT DISTINCT partition FROM ${parts.from} WHERE database = ${pb.str(store.database)} AND table = ${pb.str(parts.table("calls"))} AND active ORDER BY partition`,
    params: pb.params,
  });
  return rows.map((r) => r.partition);
}

const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7).replace("-", "");

describe("RETENTION_DAYS, the server's default", () => {
  it("applies to projects without a retention of their own, and months past every project's retention are dropped", async () => {
    // The data is stored before the default applies, as where an operator sets it on a running
    // deployment: with the job running, a call could be deleted before its feedback is stored,
    // and feedback whose call is gone cannot be told expired.
    const before = await startTestService();
    const ANCIENT = Date.now() - 1200 * DAY;
    try {
      // A project's own retention outranks the default, and keeps the months it still needs.
      expect((await putSettings({ retention_days: 1000 }, "acme/longer", `${before.url}/projects/acme/longer/settings`)).status).toBe(200);
      await writeCall(before.url, "acme/longer", "old", OLD);
      await writeCall(before.url, "acme/defaulted", "ancient", ANCIENT);
      await writeCall(before.url, "acme/defaulted", "old", OLD);
      await writeCall(before.url, "acme/defaulted", "new", RECENT);
      await writeOldLogRecord(before.url, "acme/defaulted");
      await waitStored(before.url);
    } finally {
      await before.stop();
    }
    const svc = await startTestService({ RETENTION_DAYS: "30", RETENTION_INTERVAL_MS: "2000", CLICKHOUSE_DATABASE: before.database });
    const store = await storeOn(svc.database);
    try {
      const res = await readSettings("acme/defaulted", `${svc.url}/projects/acme/defaulted/settings`);
      expect(await res.json()).toMatchObject({ retention_days: null, effective_retention_days: 30 });
      expect(await visible("acme/defaulted", svc.url)).toEqual(RECENT_ONLY);
      expect((await client(svc.url).lines<{ id: string }>("/calls/stream_query", { project_id: "acme/longer" })).map((c) => c.id)).toEqual(["old"]);

      expect(await untilRead(() => storedRows(store, "acme/defaulted", "old"), allZero, SLOW)).toEqual(NONE);
      expect(await untilRead(() => storedRows(store, "acme/defaulted", "ancient"), allZero, SLOW)).toEqual(NONE);
      expect((await storedRows(store, "acme/longer", "old")).calls).toBe(1);
      const months = await callMonths(store);
      expect(months).not.toContain(monthOf(ANCIENT));
      expect(months).toContain(monthOf(OLD));
    } finally {
      await store.close();
      await svc.stop();
    }
  });
});
