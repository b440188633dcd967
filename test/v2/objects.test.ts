import { beforeAll, describe, expect, it } from "vitest";
import { rowDigest, tableDigest } from "../../services/digests.js";
import { fromPlainJson, parseLossless } from "../../services/losslessJson.js";
import { basic, client, KEY_ACME, KEY_OTHER, serviceForFile } from "../support/service.js";
import type { Obj } from "../objects/support.js";
import { ISO, v2Client } from "./support.js";

/** The object-backed /v2/ families: each a round trip, seen by /obj/read and /objs/query, paged lists, deletes, bad input, 403. */
const P = "acme/v2-objects";
const service = serviceForFile();
let v2: ReturnType<typeof v2Client>;
beforeAll(async () => {
  v2 = v2Client(service.url, P);
});

const readObj = async (objectId: string, digest: string) =>
  (await client(service.url).json<{ obj: Obj }>("/obj/read", { project_id: P, object_id: objectId, digest })).obj;

interface Created {
  digest: string;
  object_id: string;
  version_index: number;
}

describe("/v2/ ops", () => {
  it("creates versions named after the op, stores the source as obj.py, reads, lists and deletes them", async () => {
    const first = await v2.post<Created>("/ops", { name: "My Op/v", source_code: "def f():\n    return 1\n" });
    expect(first).toEqual({ digest: expect.any(String), object_id: "my_op_v", version_index: 0 });
    const again = await v2.post<Created>("/ops", { name: "My Op/v", source_code: "def f():\n    return 1\n" });
    expect(again).toEqual(first);
    const second = await v2.post<Created>("/ops", { name: "My Op/v", source_code: "def f():\n    return 2\n" });
    expect(second.version_index).toBe(1);

    const read = await v2.get(`/ops/my_op_v/versions/${first.digest}`);
    expect(read).toEqual({ object_id: "my_op_v", digest: first.digest, version_index: 0, created_at: expect.stringMatching(ISO), code: "def f():\n    return 1\n" });
    const obj = await readObj("my_op_v", first.digest);
    expect(obj).toMatchObject({ kind: "op", val: { _type: "CustomWeaveType", weave_type: { type: "Op" }, files: { "obj.py": expect.any(String) } } });

    const listed = await v2.list<{ digest: string }>("/ops");
    expect(listed.map((o) => o.digest)).toEqual([first.digest, second.digest]);
    expect((await v2.list<{ digest: string }>("/ops?limit=1&offset=1")).map((o) => o.digest)).toEqual([second.digest]);

    expect(await v2.del(`/ops/my_op_v?digests=${first.digest}`)).toEqual({ num_deleted: 1 });
    expect((await v2.send("GET", `/ops/my_op_v/versions/${first.digest}`)).status).toBe(404);
    expect(await v2.del("/ops/my_op_v")).toEqual({ num_deleted: 1 });
    expect(await v2.list("/ops")).toEqual([]);
    expect((await v2.send("DELETE", "/ops/my_op_v")).status).toBe(404);
  });
});

describe("/v2/ datasets", () => {
  it("stores the rows as a table named by ref from a Dataset object", async () => {
    const rows = [{ q: "2 + 2", a: 4 }, { q: "3 * 3", a: 9 }];
    const created = await v2.post<Created>("/datasets", { name: "Arithmetic", description: "small sums", rows });
    expect(created).toMatchObject({ object_id: "arithmetic", version_index: 0 });
    const table = tableDigest(rows.map((r) => rowDigest(fromPlainJson(r))));
    const read = await v2.get(`/datasets/arithmetic/versions/${created.digest}`);
    expect(read).toEqual({
      object_id: "arithmetic", digest: created.digest, version_index: 0, created_at: expect.stringMatching(ISO),
      name: "Arithmetic", description: "small sums", rows: `weave:///${P}/table/${table}`,
    });
    const obj = await readObj("arithmetic", created.digest);
    expect(obj).toMatchObject({ base_object_class: "Dataset", val: { _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], name: "Arithmetic", rows: `weave:///${P}/table/${table}` } });
    const stored = await client(service.url).json<{ rows: { val: unknown }[] }>("/table/query", { project_id: P, digest: table });
    expect(stored.rows.map((r) => r.val)).toEqual(rows);
    const objs = await client(service.url).json<{ objs: Obj[] }>("/objs/query", { project_id: P, filter: { base_object_classes: ["Dataset"] } });
    expect(objs.objs.map((o) => o.object_id)).toEqual(["arithmetic"]);
    expect((await v2.list("/datasets")).length).toBe(1);
    expect(await v2.del("/datasets/arithmetic")).toEqual({ num_deleted: 1 });
  });

  it("digests rows as sent: 1.0 stays a float", async () => {
    const res = await fetch(`${service.url}/v2/${P}/datasets`, {
      method: "POST",
      headers: { authorization: basic(KEY_ACME), "content-type": "application/json" },
      body: '{"name": "floats", "rows": [{"x": 1.0}, {"x": 2}]}',
    });
    const created = (await res.json()) as Created;
    const read = await v2.get<{ rows: string }>(`/datasets/floats/versions/${created.digest}`);
    const table = tableDigest([rowDigest(parseLossless('{"x": 1.0}')), rowDigest(parseLossless('{"x": 2}'))]);
    expect(read.rows).toBe(`weave:///${P}/table/${table}`);
  });
});

describe("/v2/ scorers, evaluations, models", () => {
  it("a scorer is an op and a Scorer object; an evaluation names its dataset and scorers; a model keeps source and attributes", async () => {
    const scorer = await v2.post<Created & { scorer: string }>("/scorers", { name: "Exact", description: "equal?", op_source_code: "def score(output, a):\n    return output == a\n" });
    expect(scorer.scorer).toBe(`weave:///${P}/object/exact:${scorer.digest}`);
    const scorerRead = await v2.get<{ score_op: string }>(`/scorers/exact/versions/${scorer.digest}`);
    expect(scorerRead).toEqual({ object_id: "exact", digest: scorer.digest, version_index: 0, created_at: expect.stringMatching(ISO), name: "Exact", description: "equal?", score_op: expect.stringMatching(new RegExp(`^weave:///${P}/op/exact\\.score:`)) });
    const op = await readObj("exact.score", scorerRead.score_op.split(":").at(-1)!);
    expect(op.kind).toBe("op");

    const dataset = await v2.post<Created>("/datasets", { name: "qa", rows: [{ q: 1 }] });
    const datasetRef = `weave:///${P}/object/qa:${dataset.digest}`;
    const evaluation = await v2.post<Created & { evaluation_ref: string }>("/evaluations", { name: "qa-eval", dataset: datasetRef, scorers: [scorer.scorer], trials: 2, evaluation_name: "nightly", eval_attributes: { team: "x" } });
    expect(evaluation.evaluation_ref).toBe(`weave:///${P}/object/qa-eval:${evaluation.digest}`);
    expect(await v2.get(`/evaluations/qa-eval/versions/${evaluation.digest}`)).toEqual({
      object_id: "qa-eval", digest: evaluation.digest, version_index: 0, created_at: expect.stringMatching(ISO), name: "qa-eval", description: null,
      dataset: datasetRef, scorers: [scorer.scorer], trials: 2, evaluation_name: "nightly", evaluate_op: null, predict_and_score_op: null, summarize_op: null,
    });
    expect((await readObj("qa-eval", evaluation.digest)).base_object_class).toBe("Evaluation");

    const model = await v2.post<Created & { model_ref: string }>("/models", { name: "Echo", source_code: "class Echo: ...", attributes: { temperature: 0 } });
    expect(await v2.get(`/models/echo/versions/${model.digest}`)).toEqual({
      object_id: "echo", digest: model.digest, version_index: 0, created_at: expect.stringMatching(ISO), name: "Echo", description: null, source_code: "class Echo: ...", attributes: { temperature: 0 },
    });
    expect((await v2.list<{ object_id: string }>("/models")).map((m) => m.object_id)).toEqual(["echo"]);
    expect((await v2.list<{ object_id: string }>("/scorers")).map((m) => m.object_id)).toEqual(["exact"]);
    expect((await v2.list<{ object_id: string }>("/evaluations")).map((m) => m.object_id)).toEqual(["qa-eval"]);
    // A family reads only its own objects.
    expect((await v2.send("GET", `/models/qa-eval/versions/${evaluation.digest}`)).status).toBe(404);
    expect((await v2.send("DELETE", "/models/qa-eval")).status).toBe(404);
    expect(await v2.del(`/models/echo?digests=${model.digest}`)).toEqual({ num_deleted: 1 });
  });

  it("refuses bad input with 422 (or 404 for refs that name nothing) and writes nothing", async () => {
    const before = (await client(service.url).json<{ objs: Obj[] }>("/objs/query", { project_id: P })).objs.length;
    const bad = [
      ["/scorers", { description: "no name", op_source_code: "x" }, 422],
      ["/datasets", { name: "d", rows: [1, 2] }, 422],
      ["/models", { name: "bad:name", source_code: "x" }, 422],
      ["/evaluations", { name: "e", dataset: "not a ref" }, 422],
      ["/evaluations", { name: "e", dataset: "weave:///other/p/object/d:x" }, 422],
      ["/evaluations", { name: "e", dataset: `weave:///${P}/object/missing:x` }, 404],
      ["/evaluations", { name: "e", dataset: `weave:///${P}/object/missing:x`, trials: 0 }, 422],
    ] as const;
    for (const [path, body, status] of bad) {
      const res = await v2.send("POST", path, body);
      expect({ path, body, status: res.status }).toEqual({ path, body, status });
      expect(res.body).toMatchObject({ detail: expect.anything() });
    }
    expect((await v2.send("GET", "/ops?limit=-1")).status).toBe(422);
    expect((await client(service.url).json<{ objs: Obj[] }>("/objs/query", { project_id: P })).objs.length).toBe(before);
  });

  it("answers 403 to another entity's key and writes nothing", async () => {
    const other = v2Client(service.url, "acme/v2-forbidden", KEY_OTHER);
    expect((await other.send("POST", "/models", { name: "m", source_code: "x" })).status).toBe(403);
    expect((await other.send("GET", "/models")).status).toBe(403);
    expect(await v2Client(service.url, "acme/v2-forbidden").list("/models")).toEqual([]);
  });
});
