/**
 * The windowed page read must give exactly what the whole read gives, whatever older
 * versions of the threads are still unmerged: tested against stored rows written directly.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { THREAD_SORT_FIELDS, type ThreadSortBy } from "../../services/contract/threads.js";
import { queryDuration, type ClickHouseStore } from "../../services/store/clickhouse.js";
import type { ThreadRow } from "../../services/store/threads/threadRows.js";
import { ThreadsReadRepository } from "../../services/store/threads/threadsRead.js";
import { threadsPageQuery, type ThreadsQuerySpec } from "../../services/store/threads/threadsQuery.js";
import { freshStore } from "../support/database.js";
import { ProjectRetention } from "../../services/store/projects/retention.js";
import { ProjectSettingsRepository } from "../../services/store/projects/settingsRepository.js";

let store: ClickHouseStore;
let reads: ThreadsReadRepository;
const T0 = Date.UTC(2026, 10, 1) * 1000;

interface StoredThread {
  project_id: string;
  thread_id: string;
  turn_count: number;
  finished_count: number;
  start_time: number;
  last_updated: number;
  first_turn_id: string;
  last_turn_id: string;
  p50_turn_duration_ms: number | null;
  p99_turn_duration_ms: number | null;
  version: number;
}

function row(project: string, i: number, version: number, over: Partial<StoredThread> = {}): StoredThread {
  return {
    project_id: project, thread_id: `th${String(i).padStart(3, "0")}`, turn_count: 1 + (i % 7), finished_count: 1,
    start_time: T0 + i * 1000, last_updated: T0 + 100_000 + i * 1000, first_turn_id: `a${i}`, last_turn_id: `b${i}`,
    p50_turn_duration_ms: i % 5 === 0 ? null : (i * 37) % 101, p99_turn_duration_ms: i % 5 === 0 ? null : (i * 53) % 211, version, ...over,
  };
}

async function page(spec: ThreadsQuerySpec): Promise<ThreadRow[]> {
  const out: ThreadRow[] = [];
  for await (const r of reads.stream(spec)) out.push(r);
  return out;
}

const windowed = async () =>
  (await queryDuration.get()).values.find((v) => v.metricName === "clickhouse_query_seconds_count" && v.labels.operation === "threads_page_window")?.value ?? 0;

beforeAll(async () => {
  store = await freshStore();
  reads = new ThreadsReadRepository(store, new ProjectRetention(new ProjectSettingsRepository(store), null));
});
afterAll(async () => store.close());

describe("windowed thread pages", () => {
  it("fall back to the whole read when older versions crowd the head of the order", async () => {
    const P = "acme/crowded";
    // 40 threads; the 20 least recently updated still have an older version that looked
    // newer than every current one (a turn since deleted, say).
    await store.insert("test_threads", "threads", Array.from({ length: 40 }, (_, i) => row(P, i, 10)));
    await store.insert("test_threads", "threads", Array.from({ length: 20 }, (_, i) => row(P, i, 5, { last_updated: T0 + 10_000_000 + i })));
    const spec: ThreadsQuerySpec = { projectId: P, limit: 4 };
    expect((await page(spec)).map((t) => t.thread_id)).toEqual(["th039", "th038", "th037", "th036"]);
  });

  it("give the whole read's answer for every sort, page and filter", async () => {
    const P = "acme/windows";
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const rows: StoredThread[] = [];
    for (let i = 0; i < 120; i++) {
      rows.push(row(P, i, 100));
      // Older versions, some above and some below the current figures, some with no turn.
      for (let v = 0; v < Math.floor(random() * 3); v++) {
        rows.push(row(P, Math.floor(random() * 120), 10 + v, {
          turn_count: Math.floor(random() * 9), last_updated: T0 + Math.floor(random() * 300_000), start_time: T0 + Math.floor(random() * 200_000),
          p99_turn_duration_ms: random() < 0.2 ? null : Math.floor(random() * 300), p50_turn_duration_ms: Math.floor(random() * 150),
        }));
      }
    }
    rows.push(row(P, 200, 100, { turn_count: 0 }));
    await store.insert("test_threads", "threads", rows);
    const before = await windowed();
    const filters = [null, { after_datetime: new Date((T0 + 30_000) / 1000).toISOString() }, { thread_ids: ["th001", "th050", "th099", "th200"] }];
    for (const field of THREAD_SORT_FIELDS) {
      for (const direction of ["asc", "desc"] as const) {
        const sortBy: ThreadSortBy[] = [{ field, direction }];
        for (const filter of filters) {
          for (const [limit, offset] of [[5, 0], [10, 20], [7, 45]] as const) {
            const spec: ThreadsQuerySpec = { projectId: P, sortBy, limit, offset, filter };
            const whole = await store.rows<ThreadRow>("test_whole", threadsPageQuery(spec));
            expect(await page(spec), JSON.stringify(spec)).toEqual(whole);
          }
        }
      }
    }
    expect(await windowed()).toBeGreaterThan(before);
  });
});
