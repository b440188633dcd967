import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../../services/json.js";
import type { CallSnapshot } from "../../services/store/calls/callRows.js";
import { CallsWriteRepository } from "../../services/store/calls/callsWrite.js";
import { MAX_LEAVES } from "../../services/store/calls/flatten.js";
import { decodeUrlComponent, RefBounds } from "../../services/store/calls/refTargets.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { CALL_REF_BOUNDS_SELECT } from "../../services/store/projects/expiredRefs.js";
import { callSnapshot } from "../support/callSnapshot.js";
import { freshStore } from "../support/database.js";

/**
 * The targets the worker finds in the calls it writes (store/calls/refTargets.ts) are those
 * the SQL form of the rule finds in the same rows once stored (`CALL_REF_BOUNDS_SELECT`, which
 * a view applied to every insert until migration 50): refs in `op_name` and the leaves, ids
 * URL-decoded as ClickHouse decodes them, `files` leaves, and the JSON text's refs when the
 * leaves may miss some.
 */

const PROJECTS = ["e/p", "e/q"] as const;

/** Pieces of a ref's id: percent escapes valid, partial and invalid, and characters around them. */
const ID_PIECES = ["a", "Z", "9", ":", "v1", "%41", "%2F", "%e2%82%ac", "%E2%82", "%zz", "%4", "%", "%%41", "é", " ", "-", "/", '\\"'];
const refId = fc.oneof(
  { weight: 9, arbitrary: fc.array(fc.constantFrom(...ID_PIECES), { maxLength: 8 }).map((p) => p.join("")) },
  { weight: 1, arbitrary: fc.constant("x".repeat(5000)) },
);
const ref = fc
  .record({
    entity: fc.constantFrom("e", "x", ""),
    project: fc.constantFrom("p", "q", "r"),
    kind: fc.constantFrom("object", "op", "table", "call", ""),
    id: refId,
    tail: fc.constantFrom("", "/attr/rows/id/abc", "/"),
  })
  .map(({ entity, project, kind, id, tail }) => `weave:///${entity}/${project}/${kind}/${id}${tail}`);

/** A leaf's value: a ref, a ref after other text, a digest, or plain text. */
const leaf: fc.Arbitrary<JsonValue> = fc.oneof(
  ref,
  ref.map((r) => `see ${r}`),
  fc.constantFrom("d1", "digest-2", "", "plain", "weave:/", "weave:///"),
  fc.integer(),
  fc.constant(null),
);
const filesMap = fc.dictionary(fc.constantFrom("a.png", "code.py", "b"), leaf, { maxKeys: 3 });
const jsonObject: fc.Arbitrary<JsonObject> = fc.dictionary(
  fc.constantFrom("k", "files", "nested", "x.files.y", "messages"),
  fc.oneof(leaf, filesMap, fc.array(leaf, { maxLength: 3 }), fc.record({ files: filesMap, note: leaf })),
  { maxKeys: 4 },
);

let nextId = 0;
const snapshot = fc
  .record({
    project_id: fc.constantFrom(...PROJECTS),
    op_name: fc.oneof(ref, fc.constantFrom("op", "weave:///e/p/op/say:v0", "weave:///e/q/op/say%20it:v1")),
    started_at: fc.integer({ min: 1, max: 1_000_000 }),
    ended: fc.boolean(),
    attributes: jsonObject,
    inputs: jsonObject,
    output: leaf,
    summary: fc.option(jsonObject, { nil: null }),
    // Past MAX_LEAVES leaves, the refs after the last leaf kept are in the JSON text only.
    many: fc.option(ref, { freq: 8, nil: null }),
  })
  .map(({ many, ended, ...c }): CallSnapshot =>
    callSnapshot({
      ...c,
      id: `c${nextId++}`,
      inputs: many === null ? c.inputs : { ...c.inputs, many: [...Array.from({ length: MAX_LEAVES }, (_, i) => i), many, { files: { z: "late-digest" } }] },
      ended_at: ended ? c.started_at + 1 : null,
      output: ended ? c.output : null,
    }),
  );

type Bound = { project_id: string; target: string; started_at: string | number };
const normalized = (rows: readonly Bound[]) => rows.map((r) => `${r.project_id} ${r.target} ${Number(r.started_at)}`).sort();
/**
 * A target whose decoded id is not UTF-8 (ClickHouse answers its bytes as U+FFFD) names
 * nothing stored: the worker leaves it out (refTargets.ts, `decodeUrlComponent`). No
 * generated call holds a U+FFFD of its own.
 */
const utf8Targets = (rows: readonly string[]) => rows.filter((r) => !r.includes("\uFFFD"));

describe("call_ref_bounds written by the worker (store/calls/refTargets.ts)", () => {
  let store: ClickHouseStore;
  beforeAll(async () => {
    store = await freshStore();
  });
  afterAll(async () => {
    await store.command("drop", { sql: `DROP DATABASE IF EXISTS ${store.database}`, params: {} });
    await store.close();
  });

  it("holds, per project and target, the newest start of the calls the SQL form of the rule finds", async () => {
    const repo = new CallsWriteRepository(store);
    const read = async (): Promise<{ worker: string[]; rule: string[] }> => ({
      worker: normalized(await store.rows<Bound>("worker", { sql: "SELECT project_id, target, max(started_at) AS started_at FROM call_ref_bounds GROUP BY project_id, target", params: {} })),
      rule: normalized(await store.rows<Bound>("rule", { sql: `SELECT project_id, target, max(started_at) AS started_at FROM (${CALL_REF_BOUNDS_SELECT}) GROUP BY project_id, target`, params: {} })),
    });
    const found: string[] = [];
    await fc.assert(
      fc.asyncProperty(fc.array(snapshot, { minLength: 1, maxLength: 12 }), async (calls) => {
        for (const table of ["calls", "call_ref_bounds"]) await store.command("truncate", { sql: `TRUNCATE TABLE ${table}`, params: {} });
        await repo.insertSnapshots(calls.map((s) => ({ snapshot: s, version: 1 })));
        const { worker, rule } = await read();
        expect(worker).toEqual(utf8Targets(rule));
        found.push(...worker);
      }),
      { numRuns: 40, seed: 43 },
    );
    // The runs found something to compare: targets of every kind, from the leaves and from the text.
    for (const kind of ["object/", "table/", "file/"]) expect(found.some((r) => r.split(" ")[1]!.startsWith(kind))).toBe(true);
    expect(found.some((r) => r.includes("file/late-digest"))).toBe(true);
  });

  it("finds only refs to the call's own project, and nothing in a call that names none", async () => {
    const targets = (op_name: string, inputs: JsonObject) => {
      const refs = new RefBounds();
      refs.add({ projectId: "e/p", opName: op_name, values: Object.values(inputs).map(String), fileLeaves: [], jsonText: () => JSON.stringify(inputs) }, 1);
      return refs.rows().map((r) => r.target);
    };
    expect(targets("openai.chat", { prompt: "hello" })).toEqual([]);
    expect(targets("weave:///e/p/op/say:v0", { dataset: "weave:///e/p/object/Dataset:v3/attr/rows", other: "weave:///e/q/object/X:v1" })).toEqual([
      "object/say:v0",
      "object/Dataset:v3",
    ]);
  });

  it("decodes a ref's id as ClickHouse's decodeURLComponent does", () => {
    expect(decodeUrlComponent("a%20b")).toBe("a b");
    expect(decodeUrlComponent("%e2%82%ac")).toBe("€");
    expect(decodeUrlComponent("%%41")).toBe("%%41");
    expect(decodeUrlComponent("%zz%41")).toBe("%zzA");
    expect(decodeUrlComponent("x%4")).toBe("x%4");
    expect(decodeUrlComponent("%E2%82")).toBeNull();
  });
});
