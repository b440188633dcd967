import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { annotationApi } from "../annotationQueues/support.js";
import { readContent, uploadFile } from "../files/support.js";
import { storeOn } from "../support/database.js";
import { untilRead } from "../support/polling.js";
import { basic, client, iso, KEY_ACME, serviceForFile } from "../support/service.js";

/** The worker's retention job and ClickHouse's mutations take their time. */
const SLOW = { timeoutMs: 120_000 };

/**
 * What a project's retention removes besides its calls (services/store/projects/expiredRefs.ts):
 * the objects, tables and files only expired calls reference (directly or through objects),
 * and the annotation items of expired calls; everything a retained call, a kept object or no
 * call at all references stays. All through HTTP, after the worker's retention job ran.
 */

const DAY = 86_400_000;
const OLD = Date.now() - 400 * DAY;
const RECENT = Date.now() - 2 * DAY;
const service = serviceForFile({ RETENTION_INTERVAL_MS: "2000" });
const P = "acme/retention-refs";
const BASE = `weave:///${P}`;

const api = () => client(service.url);

async function createObject(objectId: string, val: unknown): Promise<string> {
  return (await api().json<{ digest: string }>("/obj/create", { obj: { project_id: P, object_id: objectId, val } })).digest;
}

async function createTable(rows: unknown[]): Promise<string> {
  return (await api().json<{ digest: string }>("/table/create", { table: { project_id: P, rows } })).digest;
}

const upload = async (text: string): Promise<string> => (await uploadFile(service.url, P, Buffer.from(text))).digest;

async function writeCall(id: string, startedMs: number, opName: string, inputs: Record<string, unknown>): Promise<void> {
  const start = { project_id: P, id, trace_id: `t-${id}`, op_name: opName, started_at: iso(startedMs), attributes: {}, inputs };
  const end = { project_id: P, id, ended_at: iso(startedMs + 1000), started_at: iso(startedMs), output: "ok", summary: {} };
  await api().json("/call/upsert_batch", { batch: [{ mode: "start", req: { start } }, { mode: "end", req: { end } }] });
}

interface Fixture {
  readonly objects: Record<string, string>;
  readonly tables: Record<string, string>;
  readonly files: Record<string, string>;
}

/** What each read answers of every object, table and file of the fixture: alive or not. */
async function visible(f: Fixture) {
  const c = api();
  const listed = (await c.json<{ objs: { object_id: string }[] }>("/objs/query", { project_id: P })).objs.map((o) => o.object_id).sort();
  const objects: Record<string, { read: number; ref: number }> = {};
  for (const [name, digest] of Object.entries(f.objects)) {
    const read = (await c.post("/obj/read", { project_id: P, object_id: name, digest })).status;
    const ref = (await c.post("/refs/read_batch", { refs: [`${BASE}/object/${name}:${digest}`] })).status;
    objects[name] = { read, ref };
  }
  const tables: Record<string, { query: number; ref: number }> = {};
  for (const [name, digest] of Object.entries(f.tables)) {
    const query = (await c.post("/table/query", { project_id: P, digest })).status;
    const ref = (await c.post("/refs/read_batch", { refs: [`${BASE}/table/${digest}`] })).status;
    tables[name] = { query, ref };
  }
  const files: Record<string, number> = {};
  for (const [name, digest] of Object.entries(f.files)) files[name] = (await readContent(service.url, P, digest)).status;
  return { listed, objects, tables, files };
}

const ALIVE = { read: 200, ref: 200 };
const GONE = { read: 404, ref: 404 };
const TABLE_ALIVE = { query: 200, ref: 200 };
const TABLE_GONE = { query: 404, ref: 404 };

/**
 * Rows still stored of what the old call alone referenced, and of what stays, per table:
 * the storage is reclaimed, not only hidden.
 */
async function storedRows(store: ClickHouseStore, f: Fixture): Promise<Record<string, number>> {
  const pb = new ParamBuilder();
  const p = pb.str(P);
  const objects = (names: string[]) => `(SELECT count() FROM objects WHERE project_id = ${p} AND object_id IN ${pb.inStrings(names)})`;
  const tables = (names: string[]) => pb.inStrings(names.map((n) => f.tables[n]!));
  const files = (names: string[]) => pb.inStrings(names.map((n) => f.files[n]!));
  const [row] = await store.rows<Record<string, string>>("test_stored_rows", {
    sql: `SELECT ${objects(["old_dataset", "old_op"])} AS expired_objects,
                 ${objects(["shared", "published", "inner", "keeper", "deep", "late"])} AS kept_objects,
                 (SELECT count() FROM tables WHERE project_id = ${p} AND digest IN ${tables(["old"])}) AS expired_tables,
                 (SELECT count() FROM table_positions WHERE project_id = ${p} AND table_digest IN ${tables(["old"])}) AS expired_positions,
                 (SELECT count() FROM tables WHERE project_id = ${p} AND digest IN ${tables(["shared", "published", "kept"])}) AS kept_tables,
                 (SELECT count() FROM table_rows WHERE project_id = ${p} AND val LIKE '%only old%') AS expired_table_rows,
                 (SELECT count() FROM table_row_leaves WHERE project_id = ${p} AND value = 'only old') AS expired_leaves,
                 (SELECT count() FROM table_rows WHERE project_id = ${p} AND val LIKE '%old row%') AS shared_table_rows,
                 (SELECT count() FROM files WHERE project_id = ${p} AND digest IN ${files(["old_code", "old_image"])}) AS expired_files,
                 (SELECT count() FROM file_chunks WHERE project_id = ${p} AND data IN ('def old_op(): pass', 'an image only the old call shows')) AS expired_chunks,
                 (SELECT count() FROM files WHERE project_id = ${p} AND digest IN ${files(["published"])}) AS kept_files,
                 (SELECT count() FROM annotation_queue_items WHERE project_id = ${p} AND call_id = 'old') AS expired_items,
                 (SELECT count() FROM annotation_progress WHERE project_id = ${p}) AS progress`,
    params: pb.params,
  });
  return Object.fromEntries(Object.entries(row!).map(([k, v]) => [k, Number(v)]));
}

const STORED_AFTER = {
  expired_objects: 0, kept_objects: 6, expired_tables: 0, expired_positions: 0, kept_tables: 3, expired_table_rows: 0, expired_leaves: 0,
  shared_table_rows: 1, expired_files: 0, expired_chunks: 0, kept_files: 1, expired_items: 0, progress: 0,
};


describe("a project's retention, past its calls", () => {
  let fixture: Fixture;
  let queueId: string;
  let store: ClickHouseStore;
  afterAll(async () => store.close());

  beforeAll(async () => {
    store = await storeOn(service.database);
    // Only the old call references these (the dataset's table and the op's code through their objects).
    const oldCode = await upload("def old_op(): pass");
    const oldImage = await upload("an image only the old call shows");
    const oldTable = await createTable([{ q: "old row" }, { q: "only old" }]);
    const oldDataset = await createObject("old_dataset", { _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], rows: `${BASE}/table/${oldTable}` });
    const oldOp = await createObject("old_op", { _type: "CustomWeaveType", weave_type: { type: "Op" }, files: { "obj.py": oldCode } });
    // Both calls reference these.
    const shared = await createObject("shared", { v: "both" });
    const sharedTable = await createTable([{ q: "shared row" }, { q: "old row" }]);
    // No call references these.
    const published = await createObject("published", { v: "by hand" });
    const publishedTable = await createTable([{ q: "published row" }]);
    const publishedFile = await upload("published by hand");
    // The old call references these, and so does `keeper`, an object no call references (kept).
    const keptTable = await createTable([{ q: "kept row" }]);
    const inner = await createObject("inner", { v: "inner" });
    const keeper = await createObject("keeper", { rows: `${BASE}/table/${keptTable}`, inner: `${BASE}/object/inner:${inner}` });
    // The old call references these, and so does a recent one where its leaves do not show it:
    // below the depth bound of the flattened leaves, and past their budget.
    const deep = await createObject("deep", { v: "deep" });
    const late = await createObject("late", { v: "late" });

    await writeCall("old", OLD, `${BASE}/op/old_op:${oldOp}`, {
      dataset: `${BASE}/object/old_dataset:${oldDataset}`,
      image: { _type: "CustomWeaveType", weave_type: { type: "PIL.Image.Image" }, files: { "image.png": oldImage } },
      shared: `${BASE}/object/shared:${shared}`,
      table: `${BASE}/table/${sharedTable}`,
      kept: `${BASE}/table/${keptTable}`,
      inner: `${BASE}/object/inner:${inner}`,
      deep: `${BASE}/object/deep:${deep}`,
      late: `${BASE}/object/late:${late}`,
    });
    await writeCall("new", RECENT, "plain", { shared: `${BASE}/object/shared:${shared}/key/v`, table: `${BASE}/table/${sharedTable}` });
    let nested: unknown = { ref: `${BASE}/object/deep:${deep}` };
    for (let depth = 0; depth < 14; depth++) nested = { nested };
    await writeCall("new-deep", RECENT, "plain", { nested });
    const many: Record<string, unknown> = Object.fromEntries(Array.from({ length: 1100 }, (_, i) => [`k${String(i).padStart(4, "0")}`, i]));
    await writeCall("new-late", RECENT, "plain", { ...many, late: `${BASE}/object/late:${late}` });

    const queues = annotationApi(service.url, P);
    queueId = await queues.create({ name: "review" });
    expect(await queues.add(queueId, ["old", "new"])).toEqual({ added_count: 2, duplicates: 0 });
    const [oldItem] = (await queues.items(queueId)).filter((i) => i.call_id === "old");
    expect((await queues.progress(queueId, oldItem!.id, "completed")).status).toBe(200);

    fixture = {
      objects: { old_dataset: oldDataset, old_op: oldOp, shared, published, inner, keeper, deep, late },
      tables: { old: oldTable, shared: sharedTable, published: publishedTable, kept: keptTable },
      files: { old_code: oldCode, old_image: oldImage, published: publishedFile },
    };
  });

  const before = () => ({
    listed: ["deep", "inner", "keeper", "late", "old_dataset", "old_op", "published", "shared"],
    objects: { old_dataset: ALIVE, old_op: ALIVE, shared: ALIVE, published: ALIVE, inner: ALIVE, keeper: ALIVE, deep: ALIVE, late: ALIVE },
    tables: { old: TABLE_ALIVE, shared: TABLE_ALIVE, published: TABLE_ALIVE, kept: TABLE_ALIVE },
    files: { old_code: 200, old_image: 200, published: 200 },
  });
  const after = () => ({
    listed: ["deep", "inner", "keeper", "late", "published", "shared"],
    objects: { old_dataset: GONE, old_op: GONE, shared: ALIVE, published: ALIVE, inner: ALIVE, keeper: ALIVE, deep: ALIVE, late: ALIVE },
    tables: { old: TABLE_GONE, shared: TABLE_ALIVE, published: TABLE_ALIVE, kept: TABLE_ALIVE },
    files: { old_code: 404, old_image: 404, published: 200 },
  });

  it("keeps every object, table and file while no retention applies", async () => {
    expect(await visible(fixture)).toEqual(before());
    expect(await storedRows(store, fixture)).toEqual({
      ...STORED_AFTER, expired_objects: 2, expired_tables: 1, expired_positions: 2, expired_table_rows: 1, expired_leaves: 1, expired_files: 2, expired_chunks: 2, expired_items: 1, progress: 1,
    });
  });

  it("removes what only expired calls reference, and their annotation items; keeps the rest", async () => {
    const queues = annotationApi(service.url, P);
    const res = await fetch(`${service.url}/projects/${P}/settings`, {
      method: "PUT",
      headers: { authorization: basic(KEY_ACME), "content-type": "application/json" },
      body: JSON.stringify({ retention_days: 30 }),
    });
    expect(res.status).toBe(200);
    // Items of expired calls leave the reads at once, as their calls do.
    expect((await queues.items(queueId, { include_position: true })).map((i) => [i.call_id, i.position_in_queue])).toEqual([["new", 1]]);
    expect(await queues.stats([queueId])).toEqual([{ queue_id: queueId, total_items: 1, completed_items: 0 }]);

    const expected = after();
    const seen = await untilRead(() => visible(fixture), (v) => JSON.stringify(v) === JSON.stringify(expected), SLOW);
    expect(seen).toEqual(expected);
    expect(await untilRead(() => storedRows(store, fixture), (rows) => JSON.stringify(rows) === JSON.stringify(STORED_AFTER), SLOW)).toEqual(STORED_AFTER);
    // What stays reads as before: the shared table's rows (one shared with the old table) and the kept table's.
    const rows = await api().json<{ rows: { val: unknown }[] }>("/table/query", { project_id: P, digest: fixture.tables.shared! });
    expect(rows.rows.map((r) => r.val)).toEqual([{ q: "shared row" }, { q: "old row" }]);
    const kept = await api().json<{ rows: { val: unknown }[] }>("/table/query", { project_id: P, digest: fixture.tables.kept! });
    expect(kept.rows.map((r) => r.val)).toEqual([{ q: "kept row" }]);
    expect((await readContent(service.url, P, fixture.files.published!)).bytes.toString()).toBe("published by hand");
    expect(await queues.items(queueId)).toHaveLength(1);
  }, 180_000);

  it("setting the retention back keeps nothing that was deleted, and removes nothing more", async () => {
    const res = await fetch(`${service.url}/projects/${P}/settings`, {
      method: "PUT",
      headers: { authorization: basic(KEY_ACME), "content-type": "application/json" },
      body: JSON.stringify({ retention_days: null }),
    });
    expect(res.status).toBe(200);
    expect(await visible(fixture)).toEqual(after());
  });
});
