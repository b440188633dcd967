import { beforeAll, describe, expect, it } from "vitest";
import { type Client, client, iso, KEY_ADMIN, serviceForFile } from "../support/service.js";

type Detail = { detail: string | { loc: (string | number)[]; msg: string; type: string }[] };

const P = "acme/refs";
const BASE = `weave:///${P}`;

const service = serviceForFile();
const api = service.api;

/** Digests and refs of what beforeAll stores. */
let objRef: string;
let opRef: string;
let tableRef: string;
let rowDigests: string[];
let datasetRef: string;
let crossRef: string;
const callRef = `${BASE}/call/c-refs-1`;

/** The object's value as written: `1.0` must come back as `1.0`, the big integer exact. */
const OBJ_TEXT = '{"a": {"b": [10, 1.0, {"c": "deep"}]}, "big": 123456789012345678901234567890, "k/ey": "slash", "":"empty"}';
const ROW_TEXTS = ['{"q": "one", "score": 1.0}', '{"q": "two", "n": 12345678901234567890}'];

async function createObject(project: string, objectId: string, valText: string): Promise<string> {
  const res = await api.post("/obj/create", `{"obj": {"project_id": ${JSON.stringify(project)}, "object_id": ${JSON.stringify(objectId)}, "val": ${valText}}}`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { digest: string }).digest;
}

/** The raw answer text of a read_batch, and its status. */
async function readText(refs: unknown[], c: Client = api): Promise<{ status: number; text: string }> {
  const res = await c.post("/refs/read_batch", { refs });
  return { status: res.status, text: await res.text() };
}

async function read(refs: string[]): Promise<unknown[]> {
  return (await api.json<{ vals: unknown[] }>("/refs/read_batch", { refs })).vals;
}

beforeAll(async () => {
  objRef = `${BASE}/object/cfg:${await createObject(P, "cfg", OBJ_TEXT)}`;
  opRef = `${BASE}/op/my_op:${await createObject(P, "my_op", '{"_type": "CustomWeaveType", "weave_type": {"type": "Op"}, "name": "my_op"}')}`;
  const res = await api.post("/table/create", `{"table": {"project_id": "${P}", "rows": [${ROW_TEXTS.join(", ")}]}}`);
  const table = (await res.json()) as { digest: string; row_digests: string[] };
  tableRef = `${BASE}/table/${table.digest}`;
  rowDigests = table.row_digests;
  const dataset = { _type: "Dataset", _class_name: "Dataset", _bases: ["Object", "BaseModel"], name: "ds", rows: tableRef };
  datasetRef = `${BASE}/object/ds:${await createObject(P, "ds", JSON.stringify(dataset))}`;
  const other = await createObject("acme/refs-other", "secret", '{"s": 1}');
  crossRef = `${BASE}/object/holder:${await createObject(P, "holder", JSON.stringify({ r: `weave:///acme/refs-other/object/secret:${other}` }))}`;
  const rowRef = `${tableRef}/id/${rowDigests[0]}`;
  await api.json("/call/upsert_batch", {
    batch: [
      { mode: "start", req: { start: { project_id: P, id: "c-refs-1", trace_id: "t-refs", op_name: opRef, started_at: iso(Date.UTC(2026, 0, 1)), attributes: {}, inputs: { example: rowRef, n: 3 } } } },
      { mode: "end", req: { end: { project_id: P, id: "c-refs-1", ended_at: iso(Date.UTC(2026, 0, 1, 0, 0, 1)), output: { answer: "yes" }, summary: {} } } },
    ],
  });
});

describe("refs/read_batch", () => {
  it("answers an object ref with its value as created, losslessly (1.0 stays a float, big integers exact)", async () => {
    const { status, text } = await readText([objRef]);
    expect(status).toBe(200);
    expect(text).toBe('{"vals":[{"a":{"b":[10,1.0,{"c":"deep"}]},"big":123456789012345678901234567890,"k/ey":"slash","":"empty"}]}');
  });

  it("resolves key, index and attr paths through the value, losslessly", async () => {
    const refs = [`${objRef}/key/a/key/b/index/1`, `${objRef}/attr/a/key/b/index/-1/key/c`, `${objRef}/key/k%2Fey`, `${objRef}/key/`, `${objRef}/key/big`];
    const { text } = await readText(refs);
    expect(text).toBe('{"vals":[1.0,"deep","slash","empty",123456789012345678901234567890]}');
  });

  it("answers null where a path leads nowhere: a missing key, an index out of range, a step into a scalar", async () => {
    expect(await read([`${objRef}/key/nope`, `${objRef}/key/a/key/b/index/3`, `${objRef}/key/a/key/b/index/-4`, `${objRef}/key/big/key/x`, `${objRef}/key/a/id/x`])).toEqual([null, null, null, null, null]);
  });

  it("answers an op ref with the op's value", async () => {
    expect(await read([opRef])).toEqual([{ _type: "CustomWeaveType", weave_type: { type: "Op" }, name: "my_op" }]);
  });

  it("answers a table ref with its rows in table order, and a row ref with its row, losslessly", async () => {
    const { text } = await readText([tableRef, `${tableRef}/id/${rowDigests[1]}`, `${tableRef}/id/${rowDigests[0]}/key/score`]);
    expect(text).toBe('{"vals":[[{"q":"one","score":1.0},{"q":"two","n":12345678901234567890}],{"q":"two","n":12345678901234567890},1.0]}');
  });

  it("follows a nested ref met on the path: a dataset's rows, then a row by id", async () => {
    const { text } = await readText([`${datasetRef}/attr/rows/id/${rowDigests[0]}`, `${datasetRef}/attr/rows/id/${rowDigests[1]}/key/q`, `${datasetRef}/attr/rows`]);
    expect(text).toBe(`{"vals":[{"q":"one","score":1.0},"two",${JSON.stringify(tableRef)}]}`);
  });

  it("answers a call ref with the call as /call/read answers it, and follows refs in its inputs", async () => {
    const { call } = await api.json<{ call: Record<string, unknown> }>("/call/read", { project_id: P, id: "c-refs-1" });
    const vals = await read([callRef, `${callRef}/key/output/key/answer`, `${callRef}/key/inputs/key/example/key/q`, `${callRef}/attr/inputs/key/n`]);
    expect(vals).toEqual([call, "yes", "one", 3]);
  });

  it("answers in request order, the same ref as often as it is asked", async () => {
    const refs = [`${tableRef}/id/${rowDigests[1]}/key/q`, `${objRef}/key/a/key/b/index/0`, callRef + "/key/id", `${tableRef}/id/${rowDigests[0]}/key/q`, `${objRef}/key/a/key/b/index/0`];
    expect(await read(refs)).toEqual(["two", 10, "c-refs-1", "one", 10]);
    expect(await read([])).toEqual([]);
  });

  it("does not follow a nested ref into another project: its value is null", async () => {
    expect(await read([`${crossRef}/key/r/key/s`, `${crossRef}/key/r`])).toEqual([null, expect.stringMatching(/^weave:\/\/\/acme\/refs-other\/object\/secret:/)]);
  });

  it("refuses the whole request with 403 when one ref names a project the key may not reach", async () => {
    const { status, text } = await readText([objRef, "weave:///other/p/object/x:d"]);
    expect(status).toBe(403);
    expect(text).not.toContain("deep");
    const admin = client(service.url, KEY_ADMIN);
    expect((await readText([`${objRef}/key/a/key/b/index/0`], admin)).text).toBe('{"vals":[10]}');
  });

  it("answers 404 naming the ref when its object version, table, row or call does not exist", async () => {
    const unknown = [
      `${BASE}/object/cfg:nodigest`,
      `${BASE}/object/nobody:${objRef.split(":").pop()}`,
      `${BASE}/table/notable/id/${rowDigests[0]}`,
      `${tableRef}/id/norow`,
      `${BASE}/table/notable`,
      `${BASE}/call/no-call`,
    ];
    for (const ref of unknown) {
      const { status, text } = await readText([objRef, ref]);
      expect({ ref, status }).toEqual({ ref, status: 404 });
      expect((JSON.parse(text) as Detail).detail).toContain(ref);
    }
  });

  it("answers 404 naming both refs when a nested ref does not exist", async () => {
    const ghost = await createObject(P, "ghost-holder", JSON.stringify({ r: `${BASE}/object/ghost:nodigest` }));
    const ref = `${BASE}/object/ghost-holder:${ghost}/key/r/key/x`;
    const { status, text } = await readText([ref]);
    expect(status).toBe(404);
    const detail = (JSON.parse(text) as Detail).detail as string;
    expect(detail).toContain(ref);
    expect(detail).toContain(`${BASE}/object/ghost:nodigest`);
  });

  it("refuses a malformed ref with 422 at its index", async () => {
    const cases = ["not-a-ref", `${BASE}/thing/x`, `${BASE}/object/nodigest`, `${objRef}/key`, `${objRef}/edge/x`, `${objRef}/index/one`, `${tableRef}/key/q`];
    for (const bad of cases) {
      const { status, text } = await readText([objRef, bad]);
      expect({ bad, status }).toEqual({ bad, status: 422 });
      const detail = (JSON.parse(text) as Detail).detail as { loc: (string | number)[] }[];
      expect(detail.map((d) => d.loc)).toEqual([["body", "refs", 1]]);
    }
    expect((await readText([42])).status).toBe(422);
    expect((await readText(Array.from({ length: 1001 }, () => objRef))).status).toBe(422);
  });
});
