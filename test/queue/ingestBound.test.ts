import { beforeAll, describe, expect, it } from "vitest";
import { client, iso, serviceForFile } from "../support/service.js";

const service = serviceForFile({ QUEUE_MAX_PENDING_BYTES: "4000" });
beforeAll(async () => {
  // Room for about one request's bytes: concurrent requests must be refused, not buffered.
});

describe("the ingest memory bound", () => {
  it("answers 429 with Retry-After beyond QUEUE_MAX_PENDING_BYTES and stores exactly what it acknowledged", async () => {
    const api = client(service.url);
    const P = "acme/bound";
    const body = (r: number) => ({
      batch: Array.from({ length: 10 }, (_, i) => ({
        mode: "start",
        req: { start: { project_id: P, id: `b${r}-${i}`, op_name: "op", trace_id: `t${r}`, started_at: iso(Date.UTC(2026, 10, 6) + r * 10 + i), attributes: {}, inputs: { text: "x".repeat(200) } } },
      })),
    });
    const answers = await Promise.all(Array.from({ length: 24 }, async (_, r) => {
      const res = await api.post("/call/upsert_batch", body(r));
      await res.text();
      return { r, status: res.status, retryAfter: res.headers.get("retry-after") };
    }));
    const refused = answers.filter((a) => a.status === 429);
    const accepted = answers.filter((a) => a.status === 200);
    expect(refused.length).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(0);
    expect(refused.length + accepted.length).toBe(24);
    for (const a of refused) expect(Number(a.retryAfter)).toBeGreaterThan(0);
    const stored = await api.lines<{ id: string }>("/calls/stream_query", { project_id: P, columns: ["id"] });
    const expected = accepted.flatMap((a) => Array.from({ length: 10 }, (_, i) => `b${a.r}-${i}`)).sort();
    expect(stored.map((c) => c.id).sort()).toEqual(expected);
  });
});
