import { beforeAll, describe, expect, it } from "vitest";
import { pythonJsonDumps } from "../../services/digests.js";
import { fromPlainJson } from "../../services/losslessJson.js";
import { basic, client, KEY_ACME, serviceForFile } from "../support/service.js";
import { objectsApi, putJson, type Obj } from "./support.js";

/**
 * /objs/query: every filter field, sorting, paging, latest_only, metadata_only,
 * include_storage_size and include_tags_and_aliases, over one fixed project.
 */
const P = "acme/objquery";

const service = serviceForFile();
let o: ReturnType<typeof objectsApi>;
const d: Record<string, string> = {};

const DATASET = (n: number) => ({ _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], rows: `weave:///${P}/table/t${n}` });
const MODEL = { _type: "MyModel", _class_name: "MyModel", _bases: ["Model", "Object", "BaseModel"], temperature: 0.5 };
const OP = (n: number) => ({ _type: "CustomWeaveType", weave_type: { type: "Op" }, files: { "obj.py": `code ${n}` } });

beforeAll(async () => {
  o = objectsApi(client(service.url), P);
  // Created one after the other, so creation order is the order below.
  d.ds0 = await o.create("ds", DATASET(0));
  d.model0 = await o.create("model", MODEL);
  d.op0 = await o.create("op", OP(0));
  d.ds1 = await o.create("ds", DATASET(1));
  d.plain0 = await o.create("plain", { x: 1 });
  d.op1 = await o.create("op", OP(1));
  const put = (path: string, body: unknown) => putJson(service.url, basic(KEY_ACME), path, body);
  expect((await put(`/objs/ds/versions/${d.ds0}/tags`, { project_id: P, tags: ["gold", "reviewed"] })).status).toBe(200);
  expect((await put(`/objs/plain/versions/${d.plain0}/tags`, { project_id: P, tags: ["gold"] })).status).toBe(200);
  expect((await put("/objs/ds/aliases", { project_id: P, digest: d.ds0, aliases: ["prod"] })).status).toBe(200);
  expect((await put("/objs/model/aliases", { project_id: P, digest: d.model0, aliases: ["staging"] })).status).toBe(200);
});

const ids = (objs: Obj[]) => objs.map((v) => `${v.object_id}:v${v.version_index}`);
const q = async (body: Record<string, unknown>) => ids(await o.query(body));
const filtered = (filter: Record<string, unknown>) => q({ filter });

describe("filters", () => {
  it("without a filter lists every live version, oldest first", async () => {
    expect(await q({})).toEqual(["ds:v0", "model:v0", "op:v0", "ds:v1", "plain:v0", "op:v1"]);
  });

  it("object_ids, is_op, latest_only", async () => {
    expect(await filtered({ object_ids: ["ds", "plain"] })).toEqual(["ds:v0", "ds:v1", "plain:v0"]);
    expect(await filtered({ is_op: true })).toEqual(["op:v0", "op:v1"]);
    expect(await filtered({ is_op: false })).toEqual(["ds:v0", "model:v0", "ds:v1", "plain:v0"]);
    expect(await filtered({ latest_only: true })).toEqual(["model:v0", "ds:v1", "plain:v0", "op:v1"]);
    expect(await filtered({ latest_only: true, is_op: false, object_ids: ["ds", "op", "model"] })).toEqual(["model:v0", "ds:v1"]);
  });

  it("base_object_classes, exclude_base_object_classes (keeping classless values), leaf_object_classes", async () => {
    expect(await filtered({ base_object_classes: ["Dataset"] })).toEqual(["ds:v0", "ds:v1"]);
    expect(await filtered({ base_object_classes: ["Model", "Dataset"] })).toEqual(["ds:v0", "model:v0", "ds:v1"]);
    expect(await filtered({ exclude_base_object_classes: ["Dataset"] })).toEqual(["model:v0", "op:v0", "plain:v0", "op:v1"]);
    expect(await filtered({ leaf_object_classes: ["MyModel"] })).toEqual(["model:v0"]);
    expect(await filtered({ leaf_object_classes: ["Model"] })).toEqual([]);
  });

  it("tags (any of them) and aliases (any of them, latest included)", async () => {
    expect(await filtered({ tags: ["gold"] })).toEqual(["ds:v0", "plain:v0"]);
    expect(await filtered({ tags: ["reviewed", "nothing"] })).toEqual(["ds:v0"]);
    expect(await filtered({ aliases: ["prod"] })).toEqual(["ds:v0"]);
    expect(await filtered({ aliases: ["prod", "staging"] })).toEqual(["ds:v0", "model:v0"]);
    expect(await filtered({ aliases: ["latest"], object_ids: ["ds"] })).toEqual(["ds:v1"]);
    expect(await filtered({ aliases: ["prod", "latest"], object_ids: ["ds"] })).toEqual(["ds:v0", "ds:v1"]);
    expect(await filtered({ tags: ["gold"], aliases: ["prod"] })).toEqual(["ds:v0"]);
  });

  it("empty lists filter nothing", async () => {
    expect(await filtered({ object_ids: [], tags: [], aliases: [], base_object_classes: [] })).toEqual(await q({}));
  });
});

describe("sorting and paging", () => {
  it("sorts by object_id and created_at in either direction; version_index breaks ties", async () => {
    expect(await q({ sort_by: [{ field: "object_id", direction: "asc" }] })).toEqual(["ds:v0", "ds:v1", "model:v0", "op:v0", "op:v1", "plain:v0"]);
    expect(await q({ sort_by: [{ field: "object_id", direction: "desc" }] })).toEqual(["plain:v0", "op:v0", "op:v1", "model:v0", "ds:v0", "ds:v1"]);
    expect(await q({ sort_by: [{ field: "created_at", direction: "desc" }] })).toEqual(["op:v1", "plain:v0", "ds:v1", "op:v0", "model:v0", "ds:v0"]);
    expect(await q({ sort_by: [{ field: "object_id", direction: "asc" }, { field: "created_at", direction: "desc" }] })).toEqual([
      "ds:v1", "ds:v0", "model:v0", "op:v1", "op:v0", "plain:v0",
    ]);
  });

  it("pages with limit and offset", async () => {
    expect(await q({ limit: 2 })).toEqual(["ds:v0", "model:v0"]);
    expect(await q({ limit: 2, offset: 2 })).toEqual(["op:v0", "ds:v1"]);
    expect(await q({ offset: 4 })).toEqual(["plain:v0", "op:v1"]);
    expect(await q({ limit: 0 })).toEqual([]);
  });

  it("refuses other sort fields with 422", async () => {
    const res = await client(service.url).post("/objs/query", { project_id: P, sort_by: [{ field: "digest", direction: "asc" }] });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "sort_by", 0, "field"]);
  });
});

describe("what each version carries", () => {
  it("answers the values, or {} with metadata_only", async () => {
    const [full] = await o.query({ filter: { object_ids: ["model"] } });
    expect(full!.val).toEqual(MODEL);
    const [meta] = await o.query({ filter: { object_ids: ["model"] }, metadata_only: true });
    expect(meta).toEqual({ ...full, val: {} });
  });

  it("include_storage_size: the length of the value's canonical JSON", async () => {
    const objs = await o.query({ filter: { object_ids: ["model", "plain"] }, include_storage_size: true });
    expect(objs.map((v) => v.size_bytes)).toEqual([pythonJsonDumps(fromPlainJson(MODEL)).length, '{"x": 1}'.length]);
    expect((await o.query({ filter: { object_ids: ["model"] } }))[0]!.size_bytes).toBeNull();
  });

  it("include_tags_and_aliases: sorted tags and aliases of each version, latest among the aliases of the latest", async () => {
    const objs = await o.query({ filter: { object_ids: ["ds", "plain", "op"] }, include_tags_and_aliases: true });
    expect(objs.map((v) => [`${v.object_id}:v${v.version_index}`, v.tags, v.aliases])).toEqual([
      ["ds:v0", ["gold", "reviewed"], ["prod"]],
      ["op:v0", [], []],
      ["ds:v1", [], ["latest"]],
      ["plain:v0", ["gold"], ["latest"]],
      ["op:v1", [], ["latest"]],
    ]);
    expect((await o.query({ filter: { object_ids: ["ds"] } }))[0]!.tags).toBeNull();
    const read = await o.read("ds", "prod", { include_tags_and_aliases: true });
    expect([read.digest, read.tags, read.aliases]).toEqual([d.ds0, ["gold", "reviewed"], ["prod"]]);
  });

  it("answers nothing for another project", async () => {
    expect(await objectsApi(client(service.url), "acme/elsewhere").query({})).toEqual([]);
  });
});
