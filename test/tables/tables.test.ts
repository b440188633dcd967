import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowDigest, tableDigest } from "../../services/digests.js";
import { parseLossless } from "../../services/losslessJson.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { storeOn } from "../support/database.js";
import { client, KEY_OTHER, serviceForFile } from "../support/service.js";

type Row = { digest: string; val: Record<string, unknown>; original_index: number };
type Detail = { detail: string | { loc: (string | number)[]; msg: string; type: string }[] };

const service = serviceForFile();
const api = service.api;
let store: ClickHouseStore;

beforeAll(async () => {
  store = await storeOn(service.database);
});
afterAll(async () => {
  await store.close();
});

/** The spec's digest vectors (the copy the ground tests read). */
const vectors = JSON.parse(readFileSync(new URL("../ground/digest-vectors.json", import.meta.url), "utf8")) as {
  table_case: { rows_json: string[]; row_digests: string[]; table_digest: string };
};

/** A /table/create body written by hand, so that each row's text reaches the server as written. */
const createBody = (project: string, rowTexts: readonly string[], extra = "") =>
  `{"table": {"project_id": ${JSON.stringify(project)}, "rows": [${rowTexts.join(", ")}]${extra}}}`;

async function createTable(project: string, rows: readonly unknown[]): Promise<{ digest: string; row_digests: string[] }> {
  return api.json("/table/create", { table: { project_id: project, rows } });
}

async function queryRows(body: Record<string, unknown>): Promise<Row[]> {
  return (await api.json<{ rows: Row[] }>("/table/query", body)).rows;
}

const digestOf = (row: unknown) => rowDigest(parseLossless(JSON.stringify(row)));

async function count(sql: string): Promise<number> {
  const [row] = await store.rows<{ n: string }>("test_count", { sql: `SELECT toString(count()) AS n FROM ${sql}`, params: {} });
  return Number(row!.n);
}

describe("digests", () => {
  it("creates the spec's table vector with exactly its row and table digests", async () => {
    const res = await api.post("/table/create", createBody("acme/vectors", vectors.table_case.rows_json));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ digest: vectors.table_case.table_digest, row_digests: vectors.table_case.row_digests });
  });

  it("keeps numbers as written: 1.0 stays a float, big integers stay exact, in the digest and in the answer", async () => {
    const rowText = '{"x": 1.0, "big": 123456789012345678901234567890, "neg": -0.0, "tiny": 1e-7, "s": "é\\u0000"}';
    const created = await api.json<{ digest: string; row_digests: string[] }>("/table/create", createBody("acme/numbers", [rowText]));
    expect(created.row_digests).toEqual([rowDigest(parseLossless(rowText))]);
    expect(created.row_digests[0]).not.toBe(digestOf({ x: 1, big: 123456789012345678901234567890, neg: 0, tiny: 1e-7, s: "é\u0000" }));
    const answer = await api.post("/table/query", { project_id: "acme/numbers", digest: created.digest });
    const text = await answer.text();
    expect(text).toBe(`{"rows":[{"digest":"${created.row_digests[0]}","val":{"x":1.0,"big":123456789012345678901234567890,"neg":-0.0,"tiny":1e-07,"s":"é\\u0000"},"original_index":0}]}`);
    const stream = await (await api.post("/table/query_stream", { project_id: "acme/numbers", digest: created.digest })).text();
    expect(stream).toBe(`{"digest":"${created.row_digests[0]}","val":{"x":1.0,"big":123456789012345678901234567890,"neg":-0.0,"tiny":1e-07,"s":"é\\u0000"},"original_index":0}\n`);
  });

  it("digests a row by value: key order, spacing and escapes do not change it", async () => {
    const a = await api.json<{ row_digests: string[] }>("/table/create", createBody("acme/order", ['{"b": 1, "a": "x"}']));
    const b = await api.json<{ row_digests: string[] }>("/table/create", createBody("acme/order", ['{ "a":"\\u0078","b":1 }']));
    expect(b.row_digests).toEqual(a.row_digests);
  });
});

describe("create and read", () => {
  const P = "acme/roundtrip";
  const rows = [{ q: "2+2", a: 4 }, { q: "capital", a: "Paris", extra: { n: [1, 2] } }, { q: "2+2", a: 4 }];

  it("answers each route in its exact shape", async () => {
    const created = await createTable(P, rows);
    expect(Object.keys(created)).toEqual(["digest", "row_digests"]);
    expect(created.row_digests).toEqual(rows.map(digestOf));
    expect(created.digest).toBe(tableDigest(rows.map(digestOf)));

    expect(await api.json("/table/query", { project_id: P, digest: created.digest })).toEqual({
      rows: rows.map((val, i) => ({ digest: digestOf(val), val, original_index: i })),
    });
    const lines = await api.post("/table/query_stream", { project_id: P, digest: created.digest, limit: 2 });
    expect(lines.headers.get("content-type")).toMatch(/^application\/jsonl/);
    expect((await lines.text()).split("\n")).toEqual([
      JSON.stringify({ digest: digestOf(rows[0]), val: rows[0], original_index: 0 }),
      JSON.stringify({ digest: digestOf(rows[1]), val: rows[1], original_index: 1 }),
      "",
    ]);
    const asArray = await api.post("/table/query_stream", { project_id: P, digest: created.digest, offset: 2 }, { accept: "application/json" });
    expect(await asArray.json()).toEqual([{ digest: digestOf(rows[2]), val: rows[2], original_index: 2 }]);

    expect(await api.json("/table/query_stats", { project_id: P, digest: created.digest })).toEqual({ count: 3 });
    const fromDigests = await api.json("/table/create_from_digests", { project_id: P, row_digests: created.row_digests });
    expect(fromDigests).toEqual({ digest: created.digest });
  });

  it("creates an empty table", async () => {
    const created = await createTable(P, []);
    expect(created).toEqual({ digest: tableDigest([]), row_digests: [] });
    expect(await api.json("/table/query", { project_id: P, digest: created.digest })).toEqual({ rows: [] });
    expect(await api.json("/table/query_stats", { project_id: P, digest: created.digest })).toEqual({ count: 0 });
    expect(await (await api.post("/table/query_stream", { project_id: P, digest: created.digest })).text()).toBe("");
  });

  it("stores a row once per project, however many tables hold it", async () => {
    const project = "acme/shared";
    const r = (n: number) => ({ n, text: `row ${n}` });
    const a = await createTable(project, [r(1), r(2)]);
    const b = await createTable(project, [r(2), r(3), r(2)]);
    await createTable(project, [r(1), r(2)]);
    await createTable("acme/shared-elsewhere", [r(2)]);
    expect(await count(`table_rows WHERE project_id = '${project}'`)).toBe(3);
    expect(await count(`table_row_leaves WHERE project_id = '${project}'`)).toBe(6);
    expect(await count(`tables WHERE project_id = '${project}'`)).toBe(2);
    expect(b.row_digests[0]).toBe(a.row_digests[1]);
    expect((await queryRows({ project_id: project, digest: b.digest })).map((row) => row.val)).toEqual([r(2), r(3), r(2)]);
  });

  it("reads a table across batches, in order (positions and row text are read in batches)", async () => {
    const project = "acme/many";
    const rows = Array.from({ length: 2600 }, (_, i) => ({ i, pad: "x".repeat(i % 7) }));
    const created = await createTable(project, rows);
    const lines = await api.lines<Row>("/table/query_stream", { project_id: project, digest: created.digest });
    expect(lines.map((l) => [l.val.i, l.original_index])).toEqual(rows.map((r, i) => [r.i, i]));
    const page = await queryRows({ project_id: project, digest: created.digest, offset: 1200, limit: 3 });
    expect(page.map((row) => [row.val.i, row.original_index])).toEqual([[1200, 1200], [1201, 1201], [1202, 1202]]);
    expect(await api.json("/table/query_stats", { project_id: project, digest: created.digest })).toEqual({ count: 2600 });
  });
});

describe("create_from_digests", () => {
  const P = "acme/fromdigests";

  it("joins the rows of tables created in chunks, as the Python client does for large tables", async () => {
    const rows = Array.from({ length: 9 }, (_, i) => ({ id: i }));
    const chunks = [rows.slice(0, 4), rows.slice(4)];
    const created = await Promise.all(chunks.map((chunk) => createTable(P, chunk)));
    const allDigests = created.flatMap((c) => c.row_digests);
    const whole = await api.json<{ digest: string }>("/table/create_from_digests", { project_id: P, row_digests: allDigests, expected_digest: tableDigest(allDigests) });
    expect(whole).toEqual({ digest: tableDigest(rows.map(digestOf)) });
    expect((await queryRows({ project_id: P, digest: whole.digest })).map((r) => r.val)).toEqual(rows);
  });

  it("refuses digests of rows the project does not store with 404 naming them, and creates nothing", async () => {
    const known = await createTable(P, [{ k: "known" }]);
    const unknown = "UnknownRowDigestXXXXXXXXXXXXXXXXXXXXXXXXXXX";
    const res = await api.post("/table/create_from_digests", { project_id: P, row_digests: [known.row_digests[0], unknown] });
    expect(res.status).toBe(404);
    expect(((await res.json()) as Detail).detail).toBe(`row digests not found in project ${P}: ${unknown}`);
    const digest = tableDigest([known.row_digests[0]!, unknown]);
    expect((await api.post("/table/query_stats", { project_id: P, digest })).status).toBe(404);
    const elsewhere = await api.post("/table/create_from_digests", { project_id: "acme/other-project", row_digests: known.row_digests });
    expect(elsewhere.status).toBe(404);
  });
});

describe("repeated and refused writes", () => {
  const P = "acme/repeats";

  it("answers each row once after concurrent creates of one table", async () => {
    const rows = Array.from({ length: 30 }, (_, i) => ({ i }));
    const created = await Promise.all([0, 1, 2, 3].map(() => createTable(P, rows)));
    expect(new Set(created.map((c) => c.digest)).size).toBe(1);
    const read = await queryRows({ project_id: P, digest: created[0]!.digest, sort_by: [{ field: "i", direction: "desc" }] });
    expect(read.map((r) => r.original_index)).toEqual(rows.map((_, i) => 29 - i));
    expect(await api.json("/table/query_stats", { project_id: P, digest: created[0]!.digest })).toEqual({ count: 30 });
  });

  it("answers each row once when a table refused for unknown rows is created later", async () => {
    const rows = [{ late: 1 }, { late: 2 }];
    const digests = rows.map(digestOf);
    expect((await api.post("/table/create_from_digests", { project_id: P, row_digests: digests })).status).toBe(404);
    await createTable(P, [rows[0]]);
    await createTable(P, [rows[1]]);
    const { digest } = await api.json<{ digest: string }>("/table/create_from_digests", { project_id: P, row_digests: digests });
    expect(await queryRows({ project_id: P, digest })).toEqual(rows.map((val, i) => ({ digest: digests[i], val, original_index: i })));
    const sizes = await api.json("/table/query_stats_batch", { project_id: P, digests: [digest], include_storage_size: true });
    expect(sizes).toEqual({ tables: [{ digest, count: 2, storage_size_bytes: 2 * Buffer.byteLength('{"late":1}') }] });
  });
});

describe("expected_digest", () => {
  it("refuses a different digest with 400 naming both, and writes nothing", async () => {
    const project = "acme/expected";
    const actual = tableDigest([digestOf({ a: 1 })]);
    const res = await api.post("/table/create", { table: { project_id: project, rows: [{ a: 1 }], expected_digest: "wrong" } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Detail).detail).toBe(`expected_digest wrong does not match the digest of the table sent, ${actual}; nothing was written`);
    const fromDigests = await api.post("/table/create_from_digests", { project_id: project, row_digests: ["r1"], expected_digest: "wrong" });
    expect(fromDigests.status).toBe(400);
    expect(((await fromDigests.json()) as Detail).detail).toContain(tableDigest(["r1"]));
    for (const table of ["table_rows", "table_row_leaves", "table_positions", "tables"]) {
      expect({ table, rows: await count(`${table} WHERE project_id = '${project}'`) }).toEqual({ table, rows: 0 });
    }
    const right = await api.json("/table/create", { table: { project_id: project, rows: [{ a: 1 }], expected_digest: actual } });
    expect(right).toEqual({ digest: actual, row_digests: [digestOf({ a: 1 })] });
  });
});

describe("update", () => {
  const P = "acme/update";
  const r = (n: number) => ({ n });

  /** Applies the updates to a plain list, as the server must. */
  type Update = { append?: { row: unknown }; pop?: { index: number }; insert?: { index: number; row: unknown } };
  function applied(base: unknown[], updates: readonly Update[]): { rows: unknown[]; updated: string[] } {
    const rows = [...base];
    const updated: string[] = [];
    for (const u of updates) {
      if (u.append) {
        rows.push(u.append.row);
        updated.push(digestOf(u.append.row));
      } else if (u.pop) {
        updated.push(digestOf(rows.splice(u.pop.index, 1)[0]));
      } else {
        rows.splice(u.insert!.index, 0, u.insert!.row);
        updated.push(digestOf(u.insert!.row));
      }
    }
    return { rows, updated };
  }

  const cases: [string, number, Update[]][] = [
    ["append", 3, [{ append: { row: r(10) } }, { append: { row: r(11) } }]],
    ["pop from the middle, the ends", 5, [{ pop: { index: 2 } }, { pop: { index: 0 } }, { pop: { index: 2 } }]],
    ["insert at the start, middle, end", 3, [{ insert: { index: 0, row: r(20) } }, { insert: { index: 2, row: r(21) } }, { insert: { index: 5, row: r(22) } }]],
    ["a mix, popping an added row and inserting into added rows", 4, [
      { append: { row: r(30) } },
      { insert: { index: 1, row: r(31) } },
      { pop: { index: 5 } },
      { append: { row: r(32) } },
      { append: { row: r(33) } },
      { insert: { index: 5, row: r(34) } },
      { pop: { index: 1 } },
      { pop: { index: 0 } },
      { insert: { index: 0, row: r(0) } },
    ]],
    ["everything popped", 2, [{ pop: { index: 0 } }, { pop: { index: 0 } }]],
    ["an empty base", 0, [{ append: { row: r(40) } }, { insert: { index: 0, row: r(41) } }]],
  ];

  it.each(cases)("gives the digests of a fresh create of the resulting rows: %s", async (_name, baseLength, updates) => {
    const base = Array.from({ length: baseLength }, (_, i) => r(i));
    const created = await createTable(P, base);
    const expected = applied(base, updates);
    const res = await api.json<{ digest: string; updated_row_digests: string[] }>("/table/update", { project_id: P, base_digest: created.digest, updates });
    expect(res).toEqual({ digest: tableDigest(expected.rows.map(digestOf)), updated_row_digests: expected.updated });
    const fresh = await createTable(P, expected.rows);
    expect(fresh.digest).toBe(res.digest);
    expect(await queryRows({ project_id: P, digest: res.digest })).toEqual(expected.rows.map((val, i) => ({ digest: digestOf(val), val, original_index: i })));
    expect(await api.json("/table/query_stats", { project_id: P, digest: res.digest })).toEqual({ count: expected.rows.length });
  });

  it("updates a table whose positions span several batches", async () => {
    const base = Array.from({ length: 1500 }, (_, i) => r(i));
    const created = await createTable(P, base);
    const updates: Update[] = [{ pop: { index: 1000 } }, { insert: { index: 10, row: r(-1) } }, { append: { row: r(-2) } }, { pop: { index: 0 } }];
    const expected = applied(base, updates);
    const res = await api.json<{ digest: string }>("/table/update", { project_id: P, base_digest: created.digest, updates });
    expect(res.digest).toBe(tableDigest(expected.rows.map(digestOf)));
    const lines = await api.lines<Row>("/table/query_stream", { project_id: P, digest: res.digest });
    expect(lines.map((l) => l.val)).toEqual(expected.rows);
  });

  it("keeps a float appended as 1.0 a float", async () => {
    const created = await createTable(P, [r(1)]);
    const body = `{"project_id": "${P}", "base_digest": "${created.digest}", "updates": [{"append": {"row": {"f": 1.0}}}, {"insert": {"index": 0, "row": {"f": 2.50}}}]}`;
    const res = await api.json<{ updated_row_digests: string[] }>("/table/update", body);
    expect(res.updated_row_digests).toEqual([rowDigest(parseLossless('{"f": 1.0}')), rowDigest(parseLossless('{"f": 2.5}'))]);
  });

  it("refuses an index out of range with 422 at that update, and an unknown base with 404", async () => {
    const created = await createTable(P, [r(1), r(2)]);
    const bad = await api.post("/table/update", { project_id: P, base_digest: created.digest, updates: [{ append: { row: r(-333) } }, { pop: { index: 3 } }] });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({
      detail: [{ loc: ["body", "updates", 1, "pop", "index"], msg: "index 3 is out of range: the table has 3 rows at this update", type: "value_error" }],
      message: "body.updates.1.pop.index: index 3 is out of range: the table has 3 rows at this update",
    });
    const badInsert = await api.post("/table/update", { project_id: P, base_digest: created.digest, updates: [{ insert: { index: -1, row: r(-333) } }] });
    expect(badInsert.status).toBe(422);
    expect(await count(`table_rows WHERE project_id = '${P}' AND val = '{"n":-333}'`)).toBe(0);
    const unknown = await api.post("/table/update", { project_id: P, base_digest: "nope", updates: [] });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: `table nope not found in project ${P}`, message: `table nope not found in project ${P}` });
  });
});

describe("query", () => {
  const P = "acme/query";
  const rows = [
    { name: "carol", score: 10, tags: { team: "b" } },
    { name: "alice", score: 9.5, tags: { team: "a" } },
    { name: "bob", score: 100 },
    { name: "dave", tags: { team: "a" } },
    { name: "alice", score: -2, tags: { team: "b" } },
    { name: "Eve", score: "n/a" },
  ];
  let digest: string;
  beforeAll(async () => {
    digest = (await createTable(P, rows)).digest;
  });
  const indexes = async (body: Record<string, unknown>) => (await queryRows({ project_id: P, digest, ...body })).map((r) => r.original_index);

  it("sorts by a numeric field numerically, text after numbers, absent fields last", async () => {
    expect(await indexes({ sort_by: [{ field: "score", direction: "asc" }] })).toEqual([4, 1, 0, 2, 5, 3]);
    expect(await indexes({ sort_by: [{ field: "score", direction: "desc" }] })).toEqual([2, 0, 1, 4, 5, 3]);
  });

  it("sorts by a text field, ties in table order, and by several fields", async () => {
    expect(await indexes({ sort_by: [{ field: "name", direction: "asc" }] })).toEqual([5, 1, 4, 2, 0, 3]);
    expect(await indexes({ sort_by: [{ field: "tags.team", direction: "asc" }, { field: "score", direction: "desc" }] })).toEqual([1, 3, 0, 4, 2, 5]);
    expect(await indexes({ sort_by: [{ field: "name", direction: "desc" }, { field: "score", direction: "asc" }] })).toEqual([3, 0, 2, 4, 1, 5]);
  });

  it("pages sorted rows with limit and offset, with their original_index", async () => {
    const page = await queryRows({ project_id: P, digest, sort_by: [{ field: "score", direction: "asc" }], offset: 1, limit: 2 });
    expect(page).toEqual([
      { digest: digestOf(rows[1]), val: rows[1], original_index: 1 },
      { digest: digestOf(rows[0]), val: rows[0], original_index: 0 },
    ]);
    expect(await indexes({ offset: 4 })).toEqual([4, 5]);
    expect(await indexes({ limit: 0 })).toEqual([]);
    expect(await indexes({ offset: 10 })).toEqual([]);
  });

  it("filters by row digests, keeping every position of a repeated row", async () => {
    const repeated = await createTable(P, [rows[0], rows[1], rows[0], rows[2]]);
    const filter = { row_digests: [digestOf(rows[0]), digestOf(rows[2])] };
    expect(await queryRows({ project_id: P, digest: repeated.digest, filter })).toEqual([
      { digest: digestOf(rows[0]), val: rows[0], original_index: 0 },
      { digest: digestOf(rows[0]), val: rows[0], original_index: 2 },
      { digest: digestOf(rows[2]), val: rows[2], original_index: 3 },
    ]);
    const sorted = await queryRows({ project_id: P, digest: repeated.digest, filter, sort_by: [{ field: "score", direction: "desc" }], limit: 2, offset: 1 });
    expect(sorted.map((r) => r.original_index)).toEqual([0, 2]);
    const unfiltered = await queryRows({ project_id: P, digest: repeated.digest, filter: { row_digests: [] } });
    expect(unfiltered.map((r) => r.original_index)).toEqual([0, 1, 2, 3]);
    const unknown = await queryRows({ project_id: P, digest: repeated.digest, filter: { row_digests: ["unknown"] } });
    expect(unknown).toEqual([]);
  });

  it("refuses a bad sort field with 422 and an unknown table with 404", async () => {
    const bad = await api.post("/table/query", { project_id: P, digest, sort_by: [{ field: "a..b", direction: "asc" }] });
    expect(bad.status).toBe(422);
    const badStream = await api.post("/table/query_stream", { project_id: P, digest, sort_by: [{ field: "x'y", direction: "asc" }] });
    expect(badStream.status).toBe(422);
    const unknown = await api.post("/table/query", { project_id: P, digest: "nope" });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ detail: `table nope not found in project ${P}`, message: `table nope not found in project ${P}` });
    expect((await api.post("/table/query_stream", { project_id: P, digest: "nope" })).status).toBe(404);
    expect((await api.post("/table/query", { project_id: "acme/elsewhere", digest })).status).toBe(404);
  });
});

describe("stats", () => {
  const P = "acme/stats";

  it("counts rows and sums storage per table, in request order, leaving unknown tables out", async () => {
    const a = await createTable(P, [{ x: "é" }, { x: 1 }, { x: "é" }]);
    const b = await createTable(P, [{ y: 2 }]);
    expect(await api.json("/table/query_stats_batch", { project_id: P, digests: [b.digest, "unknown", a.digest, b.digest] })).toEqual({
      tables: [{ digest: b.digest, count: 1 }, { digest: a.digest, count: 3 }],
    });
    const sizes = await api.json("/table/query_stats_batch", { project_id: P, digests: [a.digest, b.digest], include_storage_size: true });
    const bytes = (val: string) => Buffer.byteLength(val, "utf8");
    expect(sizes).toEqual({
      tables: [
        { digest: a.digest, count: 3, storage_size_bytes: 2 * bytes('{"x":"é"}') + bytes('{"x":1}') },
        { digest: b.digest, count: 1, storage_size_bytes: bytes('{"y":2}') },
      ],
    });
    expect(await api.json("/table/query_stats_batch", { project_id: P })).toEqual({ tables: [] });
    const unknown = await api.post("/table/query_stats", { project_id: P, digest: "unknown" });
    expect(unknown.status).toBe(404);
  });
});

describe("bad input", () => {
  const P = "acme/bad";

  it("refuses rows that are not objects, numbers without a double, and another entity's project, writing nothing", async () => {
    const notObject = await api.post("/table/create", { table: { project_id: P, rows: [{ a: 1 }, [1, 2]] } });
    expect(notObject.status).toBe(422);
    expect(((await notObject.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "table", "rows", 1]);
    const huge = await api.post("/table/create", createBody(P, ['{"a": 1}', '{"a": 1e400}']));
    expect(huge.status).toBe(422);
    expect(await huge.json()).toEqual({
      detail: [{ loc: ["body", "table", "rows", 1], msg: "a number in the row is too large for a double", type: "value_error" }],
      message: "body.table.rows.1: a number in the row is too large for a double",
    });
    const base = await createTable("acme/bad-update", [{ a: 1 }]);
    const badAppend = await api.post("/table/update", `{"project_id": "acme/bad-update", "base_digest": "${base.digest}", "updates": [{"append": {"row": {"a": 2}}}, {"append": {"row": {"a": -1e999}}}]}`);
    expect(badAppend.status).toBe(422);
    expect(((await badAppend.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "updates", 1, "append", "row"]);
    expect(await count(`table_rows WHERE project_id = 'acme/bad-update'`)).toBe(1);
    const other = await client(service.url, KEY_OTHER).post("/table/create", { table: { project_id: P, rows: [{ a: 1 }] } });
    expect(other.status).toBe(403);
    const missing = await api.post("/table/query", { project_id: P });
    expect(missing.status).toBe(422);
    const malformed = await api.post("/table/create", '{"table": {"project_id": "acme/bad", "rows": [');
    expect(malformed.status).toBe(400);
    expect(await count(`table_rows WHERE project_id = '${P}'`)).toBe(0);
  });
});

describe("contract", () => {
  it("documents every table route in the OpenAPI document", async () => {
    const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, unknown> }> }>> };
    const tablePaths = Object.keys(doc.paths).filter((p) => p.startsWith("/table/")).sort();
    expect(tablePaths).toEqual(["/table/create", "/table/create_from_digests", "/table/query", "/table/query_stats", "/table/query_stats_batch", "/table/query_stream", "/table/update"]);
    expect(Object.keys(doc.paths["/table/query_stream"]!.post!.responses["200"]!.content)).toEqual(["application/jsonl"]);
  });
});
