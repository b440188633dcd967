import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { float64OrNull } from "../../services/store/tables/sortedPage.js";
import { client, startTestService, type Client } from "../support/service.js";

/**
 * Shallow sorted pages go through the rows' sort keys (services/store/tables/sortedPage.ts);
 * a query without `limit` takes the plain query. Every page must be the plain order's slice.
 */
const P = "acme/sorted-pages";
type Row = { digest: string; val: Record<string, unknown>; original_index: number };

const LONG = "x".repeat(70);
/** Values that tie on the 64-byte prefix, numbers in text, absent fields, unicode, a repeated row. */
function rows(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < 60; i++) {
    const row: Record<string, unknown> = { i, group: `g${i % 4}` };
    if (i % 7 !== 3) row.text = i % 5 === 0 ? `${LONG}${String.fromCharCode(97 + (i % 26))}` : i % 5 === 1 ? `${(i * 37) % 11}` : `é${(i * 13) % 17} word`;
    if (i % 3 !== 0) row.score = i % 6 === 1 ? `${(i % 9) / 2}` : (i * 7919) % 23;
    if (i % 11 === 0) row.nested = { deep: i % 2 === 0 ? "even" : 1.5 };
    out.push(row);
  }
  out.push(out[5]!, out[17]!);
  return out;
}

describe("sorted table pages through the sort keys", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  let api: Client;
  let digest: string;

  beforeAll(async () => {
    service = await startTestService();
    api = client(service.url);
    ({ digest } = await api.json<{ digest: string }>("/table/create", { table: { project_id: P, rows: rows() } }));
  });
  afterAll(async () => service.stop());

  const query = async (body: Record<string, unknown>) => (await api.json<{ rows: Row[] }>("/table/query", { project_id: P, digest, ...body })).rows;

  it("answers every page as the slice of the whole sorted table", async () => {
    const sorts = [
      [{ field: "text", direction: "asc" }],
      [{ field: "text", direction: "desc" }],
      [{ field: "score", direction: "asc" }],
      [{ field: "score", direction: "desc" }],
      [{ field: "group", direction: "asc" }, { field: "score", direction: "desc" }],
      [{ field: "nested.deep", direction: "desc" }, { field: "i", direction: "asc" }],
      [{ field: "missing", direction: "asc" }],
    ];
    for (const sort_by of sorts) {
      const whole = await query({ sort_by });
      expect(whole).toHaveLength(62);
      for (const [offset, limit] of [[0, 1], [0, 10], [5, 7], [20, 30], [55, 10], [61, 5], [62, 3]] as const) {
        const page = await query({ sort_by, offset, limit });
        expect({ sort_by, offset, limit, page }).toEqual({ sort_by, offset, limit, page: whole.slice(offset, offset + limit) });
      }
    }
  });

  it("filters by row digests on the sorted path too", async () => {
    const whole = await query({ sort_by: [{ field: "text", direction: "asc" }] });
    const row_digests = [whole[3]!.digest, whole[10]!.digest, whole[40]!.digest];
    const all = await query({ filter: { row_digests }, sort_by: [{ field: "text", direction: "asc" }] });
    expect(await query({ filter: { row_digests }, sort_by: [{ field: "text", direction: "asc" }], limit: 2 })).toEqual(all.slice(0, 2));
  });

  it("reads numbers as the sort does", () => {
    expect(["1", "-2.5", "1e3", ".5", "3.", "inf", "-Infinity"].map(float64OrNull)).toEqual([1, -2.5, 1000, 0.5, 3, Infinity, -Infinity]);
    expect(["", " 1", "0x10", "1,5", "nan", "one"].map(float64OrNull)).toEqual([null, null, null, null, null, null]);
  });
});
