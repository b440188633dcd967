/**
 * Threads end to end: calls through ingest → queue → worker → ClickHouse, threads through
 * /threads/stream_query, against figures computed here from the generated calls alone.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { THREAD_SORT_FIELDS, type ThreadSortBy, type ThreadSortField } from "../../services/contract/threads.js";
import { client, KEY_OTHER, serviceForFile } from "../support/service.js";
import { seededRandom } from "../support/seededRandom.js";

const P = "acme/threads";
const T0 = Date.UTC(2026, 10, 3, 9) * 1000;

/** One generated call; times in microseconds. */
interface Gen {
  id: string;
  thread: string | null;
  turn: string | null;
  parent: string | null;
  start: number;
  end: number | null;
}

interface Thread {
  thread_id: string;
  turn_count: number;
  start_time: number;
  last_updated: number;
  first_turn_id: string;
  last_turn_id: string;
  p50_turn_duration_ms: number | null;
  p99_turn_duration_ms: number | null;
}


const isoMicros = (us: number) => `${new Date(Math.floor(us / 1000)).toISOString().slice(0, -1)}${String(us % 1000).padStart(3, "0")}Z`;

function generate(random: () => number): Gen[] {
  const calls: Gen[] = [];
  const pick = (n: number) => Math.floor(random() * n);
  for (let i = 0; i < 26; i++) {
    const thread = `th-${String.fromCharCode(97 + ((i * 7) % 26))}${i}`;
    // Thread 1 has one turn; threads 0, 3 and 4 keep turns after the deletions below;
    // thread 8 has enough turns for p99 to differ from the maximum and from p95.
    const turns = i === 1 ? 1 : i === 8 ? 150 : [0, 3, 4].includes(i) ? 3 + pick(8) : 1 + pick(10);
    const base = T0 + i * 37_000_000 + pick(1_000_000);
    for (let j = 0; j < turns; j++) {
      const id = `${thread}-t${j}`;
      // Thread 2 has turns that start together and end together: ties are broken by turn id.
      const start = i === 2 ? base + Math.floor(j / 2) * 1_000_000 : base + j * 5_000_000 + pick(3_000_000);
      const unfinished = i === 0 || (i !== 1 && random() < 0.15);
      const end = unfinished ? null : i === 2 ? start + 400_000 : start + 1 + pick(20_000_000);
      calls.push({ id, thread, turn: id, parent: null, start, end });
      for (let m = 0, nested = i === 8 ? 0 : pick(4); m < nested; m++) {
        const nestedStart = start + 1 + pick(1000);
        calls.push({ id: `${id}-n${m}`, thread, turn: id, parent: id, start: nestedStart, end: random() < 0.8 ? nestedStart + pick(60_000_000) : null });
      }
    }
  }
  // Calls that are not turns: one in a thread but part of another turn (a thread with no
  // turn call), and one that names itself as its turn outside any thread.
  calls.push({ id: "ghost-n", thread: "th-ghost", turn: "ghost-turn", parent: null, start: T0, end: T0 + 5 });
  calls.push({ id: "lonely", thread: null, turn: "lonely", parent: null, start: T0, end: T0 + 5 });
  return calls;
}

/** The figures, computed from the generated calls by the documented definitions. */
function expectedThreads(calls: readonly Gen[], deleted: ReadonlySet<string>): Thread[] {
  const byThread = new Map<string, Gen[]>();
  for (const c of calls) {
    if (c.turn !== c.id || !c.thread || deleted.has(c.id)) continue;
    byThread.set(c.thread, [...(byThread.get(c.thread) ?? []), c]);
  }
  const byKey = <T>(key: (x: T) => [number, string]) => (a: T, b: T) => {
    const [an, as] = key(a);
    const [bn, bs] = key(b);
    return an !== bn ? an - bn : as < bs ? -1 : as > bs ? 1 : 0;
  };
  return [...byThread].map(([thread_id, turns]) => {
    const finished = turns.filter((t) => t.end !== null);
    const byStart = [...turns].sort(byKey((t: Gen) => [t.start, t.id]));
    const byEnd = [...finished].sort(byKey((t: Gen) => [t.end!, t.id]));
    const durations = finished.map((t) => (t.end! - t.start) / 1000).sort((a, b) => a - b);
    const quantile = (q: number) => (durations.length === 0 ? null : durations[Math.floor(q * durations.length)]!);
    const last = finished.length > 0 ? byEnd[byEnd.length - 1]! : byStart[byStart.length - 1]!;
    return {
      thread_id,
      turn_count: turns.length,
      start_time: byStart[0]!.start,
      last_updated: finished.length > 0 ? last.end! : last.start,
      first_turn_id: byStart[0]!.id,
      last_turn_id: last.id,
      p50_turn_duration_ms: quantile(0.5),
      p99_turn_duration_ms: quantile(0.99),
    };
  });
}

/** Sorted as documented: NULLs last in both directions, ties by thread_id in the last term's direction. */
function sorted(threads: readonly Thread[], sortBy: readonly ThreadSortBy[]): Thread[] {
  const terms: ThreadSortBy[] = [...sortBy];
  if (!terms.some((t) => t.field === "thread_id")) terms.push({ field: "thread_id", direction: terms[terms.length - 1]?.direction ?? "desc" });
  return [...threads].sort((a, b) => {
    for (const { field, direction } of terms) {
      const x = a[field];
      const y = b[field];
      if (x === y) continue;
      if (x === null) return 1;
      if (y === null) return -1;
      const c = x < y ? -1 : 1;
      return direction === "asc" ? c : -c;
    }
    return 0;
  });
}

const view = (t: Thread) => ({ ...t, start_time: isoMicros(t.start_time), last_updated: isoMicros(t.last_updated) });

function upsertItems(calls: readonly Gen[], kind: "start" | "end"): object[] {
  return calls.map((c) =>
    kind === "start"
      ? { mode: "start", req: { start: { project_id: P, id: c.id, op_name: "weave:///acme/threads/op/chat:v1", trace_id: `tr-${c.turn ?? c.id}`, parent_id: c.parent, thread_id: c.thread, turn_id: c.turn, started_at: isoMicros(c.start), attributes: {}, inputs: { q: c.id } } } }
      : { mode: "end", req: { end: { project_id: P, id: c.id, ended_at: isoMicros(c.end!), output: { a: 1 }, summary: {} } } },
  );
}

function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

const service = serviceForFile();
const api = service.api;
const random = seededRandom(20261103);
const calls = generate(random);
const deleted = new Set<string>();

const query = (body: Record<string, unknown> = {}) => api.lines<Record<string, unknown>>("/threads/stream_query", { project_id: P, ...body });

beforeAll(async () => {
  const finished = calls.filter((c) => c.end !== null);
  const endsFirst = finished.filter(() => random() < 0.15);
  const endsLater = finished.filter((c) => !endsFirst.includes(c) && random() < 0.4);
  const endsWithStarts = finished.filter((c) => !endsFirst.includes(c) && !endsLater.includes(c));
  const send = async (items: object[]) => {
    // Every batch goes twice: the second is a redelivery of the same parts.
    for (let i = 0; i < 2; i++) await api.json("/call/upsert_batch", { batch: items });
  };
  await send(shuffle(upsertItems(endsFirst, "end"), random));
  await send(shuffle([...upsertItems(calls, "start"), ...upsertItems(endsWithStarts, "end")], random));
  await send(shuffle(upsertItems(endsLater, "end"), random));
  // Starts sent again after their ends: they must not make a finished turn run again.
  await send(upsertItems(finished.filter((c) => c.turn === c.id).slice(0, 12), "start"));
});


describe("POST /threads/stream_query", () => {
  it("gives every figure of every thread, counting turn calls only, newest activity first", async () => {
    const expected = sorted(expectedThreads(calls, deleted), [{ field: "last_updated", direction: "desc" }]);
    expect(expected.length).toBe(26);
    expect(expected.some((t) => t.p50_turn_duration_ms === null)).toBe(true);
    expect(await query()).toEqual(expected.map(view));
  });

  it("streams JSON lines, or one array when only application/json is accepted", async () => {
    const res = await api.post("/threads/stream_query", { project_id: P, limit: 2 });
    expect(res.headers.get("content-type")).toContain("application/jsonl");
    expect((await res.text()).trim().split("\n")).toHaveLength(2);
    const array = await api.post("/threads/stream_query", { project_id: P, limit: 2 }, { accept: "application/json" });
    expect(((await array.json()) as unknown[]).length).toBe(2);
    expect(await query({ limit: 0 })).toEqual([]);
  });

  it("leaves deleted turns out of their thread's figures and drops threads with no turn left", async () => {
    const threadOf = (n: number) => expectedThreads(calls, deleted).find((t) => t.thread_id === `th-${String.fromCharCode(97 + ((n * 7) % 26))}${n}`)!;
    const turnsOf = (n: number) => calls.filter((c) => c.turn === c.id && c.thread === threadOf(n).thread_id);
    const targets = [threadOf(3).first_turn_id, threadOf(4).last_turn_id, ...turnsOf(5).map((t) => t.id), turnsOf(0)[0]!.id];
    const nested = calls.find((c) => c.parent !== null && c.thread === threadOf(6).thread_id);
    const ids = [...targets, ...(nested ? [nested.id] : [])];
    await api.json("/calls/delete", { project_id: P, call_ids: ids });
    for (const id of targets) deleted.add(id);
    const expected = sorted(expectedThreads(calls, deleted), [{ field: "last_updated", direction: "desc" }]);
    expect(expected.length).toBe(25);
    expect(await query()).toEqual(expected.map(view));
  });

  it("sorts by every allowed field in both directions, page by page", async () => {
    const all = expectedThreads(calls, deleted);
    for (const field of THREAD_SORT_FIELDS) {
      for (const direction of ["asc", "desc"] as const) {
        const sortBy = [{ field, direction }];
        const pages: unknown[] = [];
        for (let offset = 0; ; offset += 4) {
          const page = await query({ sort_by: sortBy, limit: 4, offset });
          pages.push(...page);
          if (page.length < 4) break;
        }
        expect(pages, `${field} ${direction}`).toEqual(sorted(all, sortBy).map(view));
      }
    }
    // Early pages went through the windowed read, the last ones through the whole read (the
    // answering process's /metrics: in the cluster run, the query process's).
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    const count = (operation: string) => Number(new RegExp(`^clickhouse_query_seconds_count\\{[^}]*operation="${operation}"[^}]*\\} (\\d+)`, "m").exec(metrics)?.[1] ?? 0);
    expect(count("threads_page_window")).toBeGreaterThan(0);
    expect(count("threads_page")).toBeGreaterThan(0);
    const mixed: ThreadSortBy[] = [{ field: "turn_count", direction: "desc" }, { field: "p50_turn_duration_ms", direction: "asc" }];
    expect(await query({ sort_by: mixed, limit: 9, offset: 3 })).toEqual(sorted(all, mixed).slice(3, 12).map(view));
  });

  it("filters by activity window and by thread ids", async () => {
    const all = expectedThreads(calls, deleted);
    const byStart = sorted(all, [{ field: "start_time", direction: "asc" }]);
    const pivot = byStart[10]!;
    const byUpdate = sorted(all, [{ field: "last_updated", direction: "asc" }]);
    const cut = byUpdate[18]!;
    const order = [{ field: "last_updated" as ThreadSortField, direction: "desc" as const }];
    const after = all.filter((t) => t.start_time > pivot.start_time);
    expect(await query({ filter: { after_datetime: isoMicros(pivot.start_time) } })).toEqual(sorted(after, order).map(view));
    const before = all.filter((t) => t.last_updated < cut.last_updated);
    expect(await query({ filter: { before_datetime: isoMicros(cut.last_updated) } })).toEqual(sorted(before, order).map(view));
    const both = after.filter((t) => t.last_updated < cut.last_updated);
    expect(both.length).toBeGreaterThan(0);
    expect(await query({ filter: { after_datetime: isoMicros(pivot.start_time), before_datetime: isoMicros(cut.last_updated) }, limit: 3 })).toEqual(sorted(both, order).slice(0, 3).map(view));
    const named = [all[1]!.thread_id, all[7]!.thread_id];
    expect(await query({ filter: { thread_ids: [...named, "th-ghost", "no-such-thread"] } })).toEqual(sorted(all.filter((t) => named.includes(t.thread_id)), order).map(view));
    expect(await query({ filter: { thread_ids: [] } })).toHaveLength(all.length);
  });

  it("refuses a sort field outside the allowed ones with 422 and the detail shape", async () => {
    const res = await api.post("/threads/stream_query", { project_id: P, sort_by: [{ field: "started_at", direction: "desc" }] });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
    expect(body.detail).toHaveLength(1);
    expect(body.detail[0]!.loc).toEqual(["body", "sort_by", 0, "field"]);
  });

  it("answers 403 for another entity's project", async () => {
    const res = await client(service.url, KEY_OTHER).post("/threads/stream_query", { project_id: P });
    expect(res.status).toBe(403);
  });
});
