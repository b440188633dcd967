import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseLossless } from "../../services/losslessJson.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { ObjectsRepository } from "../../services/store/objects/objectsRepository.js";
import { prepareObject } from "../../services/store/objects/objectValue.js";
import { freshStore } from "../support/database.js";

/** The repository's own entry points for other resources: readByRefs (for /refs/read_batch and expand_columns). */
const P = "acme/repo";
let store: ClickHouseStore;
let repo: ObjectsRepository;

beforeAll(async () => {
  store = await freshStore();
  repo = new ObjectsRepository(store);
});
afterAll(async () => store.close());

const create = async (objectId: string, text: string, project = P): Promise<string> => {
  const prepared = prepareObject(parseLossless(text), null);
  await repo.create({ projectId: project, objectId, prepared, wbUserId: "tester" });
  return prepared.digest;
};

describe("readByRefs", () => {
  it("answers the live versions' value texts in the order asked, null for unknown, deleted or other-project versions", async () => {
    const a = await create("a", '{"x": 1.0}');
    const b0 = await create("b", "[1, 2]");
    const b1 = await create("b", '{"_type": "Op", "code": "def f(): pass"}');
    const elsewhere = await create("c", '{"y": 2}', "acme/other");
    const gone = await create("d", '"bye"');
    await repo.delete(P, "d", null);
    const vals = await repo.readByRefs(P, [
      { objectId: "b", digest: b1 }, { objectId: "a", digest: a }, { objectId: "a", digest: b0 }, { objectId: "c", digest: elsewhere },
      { objectId: "d", digest: gone }, { objectId: "b", digest: b0 }, { objectId: "a", digest: a },
    ]);
    expect(vals).toEqual([
      { objectId: "b", digest: b1, kind: "op", valText: '{"_type":"Op","code":"def f(): pass"}' },
      { objectId: "a", digest: a, kind: "object", valText: '{"x":1.0}' },
      null,
      null,
      null,
      { objectId: "b", digest: b0, kind: "object", valText: "[1,2]" },
      { objectId: "a", digest: a, kind: "object", valText: '{"x":1.0}' },
    ]);
  });

  it("reads many refs in chunks (more than one query's worth of ids)", async () => {
    const digests: string[] = [];
    for (let i = 0; i < 30; i++) digests.push(await create("many", `{"i": ${i}}`));
    const refs = Array.from({ length: 2500 }, (_, i) => ({ objectId: "many", digest: digests[i % 30]! }));
    refs.push({ objectId: "many", digest: "x".repeat(43) });
    const vals = await repo.readByRefs(P, refs);
    expect(vals).toHaveLength(2501);
    expect(vals[2499]!.valText).toBe(`{"i":${2499 % 30}}`);
    expect(vals[2500]).toBeNull();
  });

  it("answers an empty list for no refs", async () => {
    expect(await repo.readByRefs(P, [])).toEqual([]);
  });
});
