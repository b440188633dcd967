import { beforeAll, describe, expect, it } from "vitest";
import { callsCountQuery } from "../../services/store/calls/callsQuery.js";
import { storeOn } from "../support/database.js";
import { iso, serviceForFile, waitStored } from "../support/service.js";

/**
 * Pages sorted by started_at are read through time windows; they must equal the same
 * slice of the whole ordered result, whatever the filter's selectivity, offset or direction.
 */
const service = serviceForFile();
const api = service.api;
const P = "acme/window";
const N = 1500;

function random(seed: number) {
  let x = seed;
  return () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
}

beforeAll(async () => {
  const rnd = random(7);
  const batch = [];
  for (let i = 0; i < N; i++) {
    // Clustered times: dense bursts and long gaps, so density estimates are often wrong.
    const at = Date.UTC(2026, 0, 1) + Math.floor(i / 100) * 86_400_000 + Math.floor(rnd() * 3_600_000);
    batch.push({ mode: "start", req: { start: { project_id: P, id: `w${i}`, op_name: "op", trace_id: "t", started_at: iso(at), attributes: {}, inputs: { bucket: i % 97 === 0 ? "rare" : "common" } } } });
  }
  await api.json("/call/upsert_batch", { batch });
});

const ids = (rows: { id: string }[]) => rows.map((r) => r.id);

describe("windowed pages", () => {
  it.each([
    { direction: "desc", limit: 10, offset: 0 },
    { direction: "desc", limit: 50, offset: 700 },
    { direction: "asc", limit: 25, offset: 0 },
    { direction: "asc", limit: 100, offset: 1450 },
  ])("equal the slice of the whole result ($direction, limit $limit, offset $offset)", async ({ direction, limit, offset }) => {
    const sort_by = [{ field: "started_at", direction }];
    const whole = ids(await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, sort_by, columns: ["id"] }));
    const page = ids(await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, sort_by, limit, offset, columns: ["id"] }));
    expect(whole).toHaveLength(N);
    expect(page).toEqual(whole.slice(offset, offset + limit));
  });

  it("finds every match of a selective filter", async () => {
    const query = { $expr: { $eq: [{ $getField: "inputs.bucket" }, { $literal: "rare" }] } };
    const sort_by = [{ field: "started_at", direction: "desc" }];
    const whole = ids(await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, sort_by, query }));
    const page = ids(await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, sort_by, query, limit: 12 }));
    expect(whole).toHaveLength(Math.ceil(N / 97));
    expect(page).toEqual(whole.slice(0, 12));
  });
});

describe("counts split into started_at slices", () => {
  it("equal the plain count wherever the split falls, with versions and deletions", async () => {
    const ended = Array.from({ length: N }, (_, i) => i).filter((i) => i % 3 === 0);
    await api.json("/call/upsert_batch", {
      batch: ended.map((i) => ({ mode: "end", req: { end: { project_id: "acme/window-count", id: `c${i}`, ended_at: iso(Date.UTC(2026, 0, 9)), summary: {} } } })),
    });
    const starts = Array.from({ length: N }, (_, i) => ({
      mode: "start",
      req: { start: { project_id: "acme/window-count", id: `c${i}`, op_name: "op", trace_id: `t${i % 40}`, started_at: iso(Date.UTC(2026, 0, 1) + i * 60_000), attributes: {}, inputs: {} } },
    }));
    await api.json("/call/upsert_batch", { batch: starts });
    await api.json("/call/upsert_batch", { batch: starts.slice(0, 200) }); // repeated starts: more versions
    await api.json("/calls/delete", { project_id: "acme/window-count", call_ids: ["c10", "c700", "c1499"] });
    await waitStored(service.url); // read below straight from the store
    const store = await storeOn(service.database);
    try {
      const spec = { projectId: "acme/window-count" };
      const count = async (slices: { fromMicros?: number; toMicros?: number }[]) => {
        const [row] = await store.rows<{ count: string; total_storage_size_bytes: string }>("test_count", callsCountQuery(spec, true, slices));
        return { count: Number(row!.count), size: Number(row!.total_storage_size_bytes) };
      };
      const plain = await count([]);
      expect(plain.count).toBe(N - 3);
      const t = (i: number) => Date.UTC(2026, 0, 1) * 1000 + i * 60_000_000;
      for (const at of [t(0), t(1), t(700), t(749) + 1, t(N - 1), t(N + 5)]) {
        expect(await count([{ toMicros: at - 1 }, { fromMicros: at }])).toEqual(plain);
      }
      expect(await count([{ toMicros: t(300) }, { fromMicros: t(300) + 1, toMicros: t(900) }, { fromMicros: t(900) + 1 }])).toEqual(plain);
    } finally {
      await store.close();
    }
  });
});
