import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { objectDigest, pythonJsonDumps } from "../../services/digests.js";
import { parseLossless } from "../../services/losslessJson.js";
import { basic, client, KEY_OTHER, serviceForFile } from "../support/service.js";
import { ISO_MICROS, objectsApi, putJson, valOfAnswer, type Obj } from "./support.js";

/**
 * /obj/create, /obj/read and /obj/delete over HTTP against ClickHouse: digests as the Weave
 * clients compute them, values answered as created, versions, deletion and restoration.
 */
const P = "acme/objects";
const VECTORS = JSON.parse(readFileSync(new URL("../ground/digest-vectors.json", import.meta.url), "utf8")) as {
  object_cases: { input_json: string; canonical: string; digest: string }[];
};

const service = serviceForFile();
const api = service.api;
let o: ReturnType<typeof objectsApi>;
beforeAll(async () => {
  o = objectsApi(api, P);
});

const readText = async (objectId: string, digest: string): Promise<string> => {
  const res = await api.post("/obj/read", { project_id: P, object_id: objectId, digest });
  expect(res.status).toBe(200);
  return res.text();
};

describe("create and read", () => {
  it("answers {digest, object_id} and reads back every field of the version", async () => {
    const res = await api.post("/obj/create", { obj: { project_id: P, object_id: "shape", val: { a: 1, b: ["x", null, true] }, wb_user_id: "spoofed" } });
    expect(res.status).toBe(200);
    const created = (await res.json()) as { digest: string; object_id: string };
    expect(created).toEqual({ digest: objectDigest(parseLossless('{"a": 1, "b": ["x", null, true]}')), object_id: "shape" });
    const obj = await o.read("shape", created.digest);
    expect(Object.keys(obj)).toEqual([
      "project_id", "object_id", "created_at", "deleted_at", "digest", "version_index", "is_latest", "kind", "base_object_class", "leaf_object_class",
      "val", "wb_user_id", "size_bytes", "tags", "aliases",
    ]);
    expect(obj).toEqual({
      project_id: P, object_id: "shape", created_at: obj.created_at, deleted_at: null, digest: created.digest, version_index: 0, is_latest: 1,
      kind: "object", base_object_class: null, leaf_object_class: null, val: { a: 1, b: ["x", null, true] }, wb_user_id: "alice",
      size_bytes: null, tags: null, aliases: null,
    });
    expect(obj.created_at).toMatch(ISO_MICROS);
    expect(Math.abs(Date.parse(obj.created_at) - Date.now())).toBeLessThan(60_000);
  });

  it("gives every spec digest vector's value its digest, and answers a value that digests the same again", async () => {
    for (const [i, vector] of VECTORS.object_cases.entries()) {
      const res = await o.createText(`vector-${i}`, vector.input_json);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { digest: string }).digest).toBe(vector.digest);
      const read = valOfAnswer(await readText(`vector-${i}`, vector.digest));
      expect(read.canonical).toBe(vector.canonical);
      expect(read.digest).toBe(vector.digest);
    }
  });

  it("keeps floats, -0.0 and big integers as sent: the answer's text carries them, and 1.0 and 1 are different values", async () => {
    const res = await o.createText("exact", '{"f": 1.0, "i": 12345678901234567890123, "z": -0.0, "e": 1e16, "s": "\\u00e9\\ud83d\\ude00", "n": [1, 1.5]}');
    const { digest } = (await res.json()) as { digest: string };
    const text = await readText("exact", digest);
    expect(text).toContain('"val":{"f":1.0,"i":12345678901234567890123,"z":-0.0,"e":10000000000000000.0,"s":"é😀","n":[1,1.5]}');
    const read = valOfAnswer(text);
    expect(read.canonical).toBe('{"e": 1e+16, "f": 1.0, "i": 12345678901234567890123, "n": [1, 1.5], "s": "\\u00e9\\ud83d\\ude00", "z": -0.0}');
    expect(read.digest).toBe(digest);
    const asInt = (await (await o.createText("exact", '{"f": 1, "i": 12345678901234567890123, "z": -0.0, "e": 1e16, "s": "é😀", "n": [1, 1.5]}')).json()) as { digest: string };
    expect(asInt.digest).not.toBe(digest);
  });

  it("takes any JSON value, not only objects", async () => {
    for (const [i, text] of ["null", "3", "2.5", '"text"', "[1, [2.0]]", "true"].entries()) {
      const res = await o.createText(`scalar-${i}`, text);
      const { digest } = (await res.json()) as { digest: string };
      expect(digest).toBe(objectDigest(parseLossless(text)));
      expect(valOfAnswer(await readText(`scalar-${i}`, "latest")).canonical).toBe(pythonJsonDumps(parseLossless(text)));
    }
  });

  it("refuses an expected_digest that differs with 400 naming both digests, and writes nothing", async () => {
    const actual = objectDigest(parseLossless('{"q": 2.0}'));
    const res = await api.post("/obj/create", `{"obj": {"project_id": "${P}", "object_id": "expect", "val": {"q": 2.0}, "expected_digest": "wrongdigest"}}`);
    expect(res.status).toBe(400);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toContain("wrongdigest");
    expect(detail).toContain(actual);
    expect(await o.query({ filter: { object_ids: ["expect"] } })).toEqual([]);
    const ok = await api.post("/obj/create", `{"obj": {"project_id": "${P}", "object_id": "expect", "val": {"q": 2.0}, "expected_digest": "${actual}"}}`);
    expect(((await ok.json()) as { digest: string }).digest).toBe(actual);
  });

  it("makes no new version when the same value is created again, whatever its key order and spacing", async () => {
    const first = await o.create("same", { a: 1, b: 2 });
    const before = await o.read("same", first);
    const again = await o.createText("same", '{ "b" : 2,\n "a": 1 }');
    expect(((await again.json()) as { digest: string }).digest).toBe(first);
    const versions = await o.query({ filter: { object_ids: ["same"] } });
    expect(versions.map((v) => [v.digest, v.version_index, v.created_at])).toEqual([[first, 0, before.created_at]]);
  });

  it("refuses a bad object id or a missing val with 422 on the field, and writes nothing", async () => {
    for (const [objectId, loc] of [["a/b", "object_id"], ["", "object_id"], ["x".repeat(129), "object_id"], ["sp ace", "object_id"]] as const) {
      const res = await api.post("/obj/create", { obj: { project_id: P, object_id: objectId, val: 1 } });
      expect(res.status, objectId).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc).toEqual(["body", "obj", loc]);
    }
    const missing = await api.post("/obj/create", { obj: { project_id: P, object_id: "noval" } });
    expect(missing.status).toBe(422);
    expect(await o.query({ filter: { object_ids: ["noval"] } })).toEqual([]);
    expect((await o.create("ünï-code_1.2", { ok: true })).length).toBe(43);
  });

  it("lists the object operations, with their path and query parameters, in the OpenAPI document", async () => {
    const res = await fetch(`${service.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      "/obj/create", "/obj/read", "/objs/query", "/obj/delete", "/objs/{object_id}/versions/{digest}/tags", "/objs/{object_id}/versions/{digest}/tags/remove",
      "/objs/{object_id}/aliases", "/objs/{object_id}/aliases/remove", "/tags", "/aliases",
    ]));
    expect(doc.paths["/objs/{object_id}/versions/{digest}/tags"]!.put!.parameters!.map((p) => `${p.in}:${p.name}`).sort()).toEqual(["path:digest", "path:object_id"]);
    expect(doc.paths["/tags"]!.get!.parameters!.map((p) => `${p.in}:${p.name}`)).toEqual(["query:project_id"]);
  });

  it("answers 403 to another entity's key for reads and writes of the project", async () => {
    const other = client(service.url, KEY_OTHER);
    expect((await other.post("/obj/create", { obj: { project_id: P, object_id: "theirs", val: 1 } })).status).toBe(403);
    expect((await other.post("/obj/read", { project_id: P, object_id: "shape", digest: "latest" })).status).toBe(403);
    expect((await putJson(service.url, basic(KEY_OTHER), "/objs/shape/aliases", { project_id: P, digest: "latest", aliases: ["x"] })).status).toBe(403);
    expect(await o.query({ filter: { object_ids: ["theirs"] } })).toEqual([]);
  });
});

describe("kind and classes", () => {
  it("marks ops: a dict whose _type is Op, or whose weave_type.type is Op", async () => {
    const op = await o.create("my_op", { _type: "CustomWeaveType", weave_type: { type: "Op" }, files: { "obj.py": "weave:///acme/objects/file/abc" } });
    const bare = await o.create("bare_op", { _type: "Op", name: "f" });
    const notOp = await o.create("not_op", { _type: "Op", weave_type: { type: "Dataset" } });
    const noType = await o.create("no_type", { weave_type: { type: "Op" } });
    expect((await o.read("my_op", op)).kind).toBe("op");
    expect((await o.read("bare_op", bare)).kind).toBe("op");
    expect((await o.read("not_op", notOp)).kind).toBe("object");
    expect((await o.read("no_type", noType)).kind).toBe("object");
  });

  it("takes the leaf class from _class_name and the base class from _bases, for Weave objects only", async () => {
    const cases: [unknown, string | null, string | null][] = [
      [{ _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], rows: "weave:///acme/objects/table/x" }, "Dataset", "Dataset"],
      [{ _type: "MyModel", _class_name: "MyModel", _bases: ["Model", "Object", "BaseModel"] }, "Model", "MyModel"],
      [{ _class_name: "Deep", _bases: ["Mid", "Scorer", "Object", "BaseModel"] }, "Scorer", "Deep"],
      [{ _class_name: "Spec", _bases: ["BaseObject", "BaseModel"] }, "Spec", "Spec"],
      [{ _class_name: "Odd", _bases: ["Thing", "BaseModel"] }, null, null],
      [{ _class_name: "Short", _bases: ["BaseModel"] }, null, null],
    ];
    for (const [i, [val, base, leaf]] of cases.entries()) {
      const digest = await o.create(`classed-${i}`, val);
      const obj = await o.read(`classed-${i}`, digest);
      expect([obj.base_object_class, obj.leaf_object_class], JSON.stringify(val)).toEqual([base, leaf]);
    }
  });

  it("marks a plain dict as a builtin_object_class (or its deprecated name set_base_object_class)", async () => {
    const digest = await o.create("board", { columns: [], name: "Top" }, { builtin_object_class: "Leaderboard" });
    const obj = await o.read("board", digest);
    expect(obj.val).toEqual({ _type: "Leaderboard", name: "Top", description: null, columns: [], _class_name: "Leaderboard", _bases: ["BaseObject", "BaseModel"] });
    expect(Object.keys(obj.val as object)).toEqual(["_type", "name", "description", "columns", "_class_name", "_bases"]);
    expect([obj.base_object_class, obj.leaf_object_class]).toEqual(["Leaderboard", "Leaderboard"]);
    expect(digest).toBe(objectDigest(parseLossless(JSON.stringify(obj.val))));
    expect(await o.create("board", { columns: [], name: "Top" }, { set_base_object_class: "Leaderboard" })).toBe(digest);
    expect(await o.create("board", obj.val, { builtin_object_class: "Leaderboard" })).toBe(digest);
  });

  it("refuses builtin_object_class on a non-dict or on a value of another class with 422", async () => {
    for (const [val, msg] of [[[1, 2], /JSON object/], [{ _class_name: "A", _bases: ["Object", "BaseModel"] }, /differs/]] as const) {
      const res = await api.post("/obj/create", { obj: { project_id: P, object_id: "badclass", val, builtin_object_class: "Leaderboard" } });
      expect(res.status).toBe(422);
      const { detail } = (await res.json()) as { detail: { loc: unknown[]; msg: string }[] };
      expect(detail[0]!.loc).toEqual(["body", "obj", "builtin_object_class"]);
      expect(detail[0]!.msg).toMatch(msg);
    }
    expect(await o.query({ filter: { object_ids: ["badclass"] } })).toEqual([]);
  });
});

describe("versions", () => {
  let d: string[];

  beforeAll(async () => {
    d = [await o.create("ver", { n: 0 }), await o.create("ver", { n: 1 }), await o.create("ver", { n: 2 })];
  });

  const summary = (objs: Obj[]) => objs.map((v) => [v.digest, v.version_index, v.is_latest]);

  it("numbers versions from 0 in creation order; only the last is latest", async () => {
    expect(summary(await o.query({ filter: { object_ids: ["ver"] } }))).toEqual([[d[0], 0, 0], [d[1], 1, 0], [d[2], 2, 1]]);
  });

  it("reads a version by digest, latest, v<N>", async () => {
    expect((await o.read("ver", d[1]!)).val).toEqual({ n: 1 });
    expect((await o.read("ver", "latest")).digest).toBe(d[2]);
    expect((await o.read("ver", "v0")).digest).toBe(d[0]);
    expect((await o.read("ver", "v2")).digest).toBe(d[2]);
  });

  it("answers 404 with a clear message for an unknown object, digest or version number", async () => {
    expect(await o.readStatus("nothing-here", "latest")).toEqual({ status: 404, detail: `object "nothing-here" not found in project ${P}` });
    expect(await o.readStatus("ver", "v3")).toEqual({ status: 404, detail: `object "ver" has no version "v3" (a digest, latest, v<N> or an alias) in project ${P}` });
    expect(await o.readStatus("ver", "nosuchdigest")).toEqual({ status: 404, detail: `object "ver" has no version "nosuchdigest" (a digest, latest, v<N> or an alias) in project ${P}` });
  });

  it("metadata_only answers val {}", async () => {
    const obj = await o.read("ver", "v1", { metadata_only: true });
    expect([obj.digest, obj.val]).toEqual([d[1], {}]);
  });
});

describe("delete and restore", () => {
  it("hides deleted versions, keeps the numbers of the others, moves latest, and restores a value created again", async () => {
    const d = [await o.create("del", { n: 0 }), await o.create("del", { n: 1 }), await o.create("del", { n: 2 })];
    const original = await o.read("del", d[1]!);
    const res = await o.remove("del", [d[1]!]);
    expect([res.status, await res.json()]).toEqual([200, { num_deleted: 1 }]);
    const deleted = await o.readStatus("del", d[1]!);
    expect(deleted.status).toBe(404);
    expect(deleted.detail).toMatch(new RegExp(`^object "del" version v1 \\(${d[1]}\\) was deleted at \\d{4}-.*Z$`));
    expect((await o.readStatus("del", "v1")).status).toBe(404);
    const live = () => o.query({ filter: { object_ids: ["del"] } }).then((objs) => objs.map((v) => [v.digest, v.version_index, v.is_latest]));
    expect(await live()).toEqual([[d[0], 0, 0], [d[2], 2, 1]]);

    expect(await (await o.remove("del", ["latest"])).json()).toEqual({ num_deleted: 1 });
    expect(await live()).toEqual([[d[0], 0, 1]]);
    expect((await o.read("del", "latest")).digest).toBe(d[0]);

    expect(await o.create("del", { n: 1 })).toBe(d[1]);
    const restored = await o.read("del", d[1]!);
    expect([restored.version_index, restored.created_at, restored.is_latest, restored.val]).toEqual([1, original.created_at, 1, { n: 1 }]);
    expect(await live()).toEqual([[d[0], 0, 0], [d[1], 1, 1]]);
    expect(await o.create("del", { n: 3 })).not.toBe(d[2]);
    expect((await o.read("del", "latest")).version_index).toBe(3);
  });

  it("deletes every live version when no digests are named; then latest is gone and deleting again is 404", async () => {
    await o.create("delall", { n: 0 });
    await o.create("delall", { n: 1 });
    expect(await (await o.remove("delall")).json()).toEqual({ num_deleted: 2 });
    expect(await o.readStatus("delall", "latest")).toEqual({ status: 404, detail: `object "delall" has no live version in project ${P}` });
    expect(await o.query({ filter: { object_ids: ["delall"] } })).toEqual([]);
    const again = await o.remove("delall");
    expect(again.status).toBe(404);
    expect((await o.remove("never-created")).status).toBe(404);
  });

  it("deletes nothing when one of the named versions does not exist", async () => {
    const d0 = await o.create("delsome", { n: 0 });
    const res = await o.remove("delsome", [d0, "missingdigest"]);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { detail: string }).detail).toContain("missingdigest");
    expect((await o.read("delsome", d0)).deleted_at).toBeNull();
    const tooMany = await o.remove("delsome", Array.from({ length: 101 }, (_, i) => `d${i}`));
    expect(tooMany.status).toBe(422);
  });
});
