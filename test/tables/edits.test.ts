import { describe, expect, it } from "vitest";
import { ValidationError } from "../../services/errors.js";
import { applyEdits, editedRowDigests, layout, type Edit } from "../../services/store/tables/tableEdits.js";

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function* stream<T>(items: readonly T[]): AsyncGenerator<T> {
  yield* items;
}

async function collect(items: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe("table edits", () => {
  it("give the list, the updated digests and the layout a plain list edit gives, over random edits", async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const base = Array.from({ length: Math.floor(next() * 8) }, (_, i) => `b${i}`);
      const list = [...base];
      const updated: string[] = [];
      const edits: Edit[] = [];
      for (let k = 0; k < 1 + Math.floor(next() * 10); k++) {
        const choice = next();
        const digest = `n${k}`;
        if (choice < 0.3 || list.length === 0) {
          edits.push({ kind: "append", digest });
          list.push(digest);
          updated.push(digest);
        } else if (choice < 0.65) {
          const index = Math.floor(next() * list.length);
          edits.push({ kind: "pop", index });
          updated.push(list.splice(index, 1)[0]!);
        } else {
          const index = Math.floor(next() * (list.length + 1));
          edits.push({ kind: "insert", index, digest });
          list.splice(index, 0, digest);
          updated.push(digest);
        }
      }
      const edited = applyEdits(base.length, edits, (i) => ["updates", i]);
      const context = { seed, base, edits };
      expect({ ...context, rows: await collect(editedRowDigests(edited.segments, stream(base))) }).toEqual({ ...context, rows: list });
      expect({ ...context, updated: edited.updated.map((u) => ("digest" in u ? u.digest : base[u.basePosition])) }).toEqual({ ...context, updated });
      expect(edited.length).toBe(list.length);
      const { kept, added } = layout(edited.segments);
      const placed: string[] = new Array<string>(list.length);
      for (const range of kept) for (let i = range.from; i < range.to; i++) placed[range.at + i - range.from] = base[i]!;
      for (const a of added) placed[a.idx] = a.digest;
      expect({ ...context, placed }).toEqual({ ...context, placed: list });
      for (let i = 1; i < kept.length; i++) expect(kept[i]!.from).toBeGreaterThanOrEqual(kept[i - 1]!.to);
    }
  });

  it("refuses indexes out of range at the update that names them", () => {
    const at = (i: number) => ["body", "updates", i, "pop", "index"];
    expect(() => applyEdits(2, [{ kind: "append", digest: "x" }, { kind: "pop", index: 3 }], at)).toThrow(ValidationError);
    try {
      applyEdits(2, [{ kind: "pop", index: -1 }], at);
    } catch (err) {
      expect((err as ValidationError).detail).toEqual([{ loc: ["body", "updates", 0, "pop", "index"], msg: "index -1 is out of range: the table has 2 rows at this update", type: "value_error" }]);
    }
    expect(() => applyEdits(2, [{ kind: "insert", index: 3, digest: "x" }], at)).toThrow(ValidationError);
    expect(applyEdits(2, [{ kind: "insert", index: 2, digest: "x" }], at).length).toBe(3);
    expect(() => applyEdits(0, [{ kind: "pop", index: 0 }], at)).toThrow(ValidationError);
  });
});
