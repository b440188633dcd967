import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { RowBinaryWriter, RowBuffer, rowsInOrder } from "../../services/store/rowBinary.js";
import { freshStore } from "../support/database.js";

let store: ClickHouseStore;
beforeAll(async () => {
  store = await freshStore();
  await store.command("test_rowbuffer_table", { sql: "CREATE TABLE kv (k String, v String) ENGINE = MergeTree ORDER BY k", params: {} });
});
afterAll(() => store.close());

describe("RowBuffer", () => {
  it("lends its buffer again once given back, and a second writer meanwhile gets one of its own", () => {
    const rows = new RowBuffer();
    const first = rows.writer(1024);
    const meanwhile = rows.writer(1024);
    expect(meanwhile.storage()).not.toBe(first.storage());
    rows.giveBack(first);
    const again = rows.writer(512);
    expect(again.storage()).toBe(first.storage());
    expect(again.bytes().length).toBe(0);
  });

  it("keeps the larger of two buffers given back, and none over its bound", () => {
    const rows = new RowBuffer(4096);
    const small = rows.writer(256);
    const large = rows.writer(2048);
    rows.giveBack(large);
    rows.giveBack(small);
    expect(rows.writer(100).storage()).toBe(large.storage());
    const huge = rows.writer(8192);
    rows.giveBack(huge);
    expect(rows.writer(100).storage()).not.toBe(huge.storage());
  });

  it("asks for more than its buffer holds: a new buffer, and the spare stays for later", () => {
    const rows = new RowBuffer();
    const first = rows.writer(64);
    rows.giveBack(first);
    expect(rows.writer(1024).storage()).not.toBe(first.storage());
    expect(rows.writer(64).storage()).toBe(first.storage());
  });

  it("inserts exactly what each writer wrote, a shorter insert after a longer one in the same buffer", async () => {
    const rows = new RowBuffer();
    const inserts = [
      [["a", "x".repeat(5000)], ["b", "long ✓"]],
      [["c", "short"]],
    ];
    for (const insert of inserts) {
      const out = rows.writer(16);
      for (const [k, v] of insert) out.string(k!).string(v!);
      await store.insertRowBinary("test_rowbuffer_insert", "kv", ["k", "v"], out.bytes(), insert.length);
      rows.giveBack(out);
    }
    const stored = await store.rows<{ k: string; v: string }>("test_rowbuffer_read", { sql: "SELECT k, v FROM kv ORDER BY k", params: {} });
    expect(stored).toEqual(inserts.flat().map(([k, v]) => ({ k, v })));
  });
});

/** Rows written one after another, with where each is in the bytes. */
function madeRows(values: readonly string[]): { bytes: Buffer; places: { start: number; end: number }[] } {
  const out = new RowBinaryWriter(16);
  const places = values.map((v) => {
    const start = out.length;
    out.string(v);
    return { start, end: out.length };
  });
  return { bytes: out.bytes(), places };
}

describe("rowsInOrder", () => {
  it("yields the rows at the places given, in their order, whatever their sizes against a chunk", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 300_000 }), { maxLength: 12 }), fc.func(fc.integer()), (sizes, rank) => {
        const values = sizes.map((n, i) => String.fromCharCode(97 + (i % 26)).repeat(n));
        const { bytes, places } = madeRows(values);
        const order = places.map((p, i) => ({ p, r: rank(i) })).sort((a, b) => a.r - b.r).map((x) => x.p);
        const expected = Buffer.concat(order.map((p) => bytes.subarray(p.start, p.end)));
        expect(Buffer.concat([...rowsInOrder(bytes, order)]).equals(expected)).toBe(true);
      }),
      { numRuns: 60 },
    );
  });

  it("inserts rows made out of order as one insert in the order asked, across several chunks and a row longer than one", async () => {
    await store.command("test_rows_in_order_table", { sql: "CREATE TABLE ordered (k String, v String) ENGINE = Log", params: {} });
    const rows = Array.from({ length: 3_000 }, (_, i) => ({ k: String(i).padStart(5, "0"), v: i === 1_500 ? "y".repeat(400_000) : `value ${i} ✓`.repeat(20) }));
    const out = new RowBinaryWriter(16);
    const places = [...rows].reverse().map(({ k, v }) => {
      const start = out.length;
      out.string(k).string(v);
      return { start, end: out.length };
    });
    await store.insertRowBinary("test_rows_in_order_insert", "ordered", ["k", "v"], rowsInOrder(out.bytes(), places.reverse()), rows.length);
    const stored = await store.rows<{ k: string; v: string }>("test_rows_in_order_read", { sql: "SELECT k, v FROM ordered", params: {} });
    expect(stored).toEqual(rows);
  });
});
