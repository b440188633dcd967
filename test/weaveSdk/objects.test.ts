import { beforeAll, describe, expect, it } from "vitest";
import { objectDigest, tableDigest } from "../../services/digests.js";
import { parseLossless } from "../../services/losslessJson.js";
import { parseRef } from "../../services/refs.js";
import { client, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { sdkProject } from "./support.js";

/** The unmodified SDK publishes a value and saves a Dataset (scripts/objects.ts); both read back by ref, by it and through the HTTP API. */
const P = "acme/sdk-objects";
const service = serviceForFile();
/** The digest a Weave client computes for a value as the SDK sends it (JSON.stringify). */
const digestOf = (value: unknown) => objectDigest(parseLossless(JSON.stringify(value)));
let run: Awaited<ReturnType<typeof runSdk<ObjectsResult>>>;

interface ObjectsResult {
  settingsRef: string;
  settingsBack: unknown;
  datasetRef: string;
  datasetBack: { name: string; description: string; length: number };
  rowsBack: Record<string, unknown>[];
  rowRefs: string[];
}

const SETTINGS = { model: "gpt-4o-mini", temperature: 0.25, stop: ["\n\n", "END"], nested: { deep: [1, 2.5, { none: null, yes: true }] }, unicode: "café ☕" };
const CAPITALS = [
  { country: "France", capital: "Paris", population_m: 2.1 },
  { country: "Japan", capital: "Tokyo", population_m: 14 },
  { country: "Peru", capital: "Lima", population_m: 10.1, tags: ["andes", "pacific"] },
];

beforeAll(async () => {
  run = await runSdk<ObjectsResult>("objects", service.url, P);
});

describe("the Weave TypeScript SDK: objects and datasets", () => {
  it("publishes a value whose ref the SDK and /obj/read both read back equal, under the digest Weave computes", async () => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    expect(run.result.settingsBack).toEqual(SETTINGS);
    const p = sdkProject(client(service.url), P);
    const ref = parseRef(run.result.settingsRef);
    expect(ref).toMatchObject({ kind: "object", entity: "acme", project: "sdk-objects", name: "settings", extra: [] });
    const obj = await p.readRef(run.result.settingsRef);
    expect(obj).toMatchObject({ object_id: "settings", kind: "object", version_index: 0, is_latest: 1, base_object_class: null, val: SETTINGS });
    expect(obj.digest).toBe(digestOf(SETTINGS));
  });

  it("saves a Dataset whose rows table the SDK and /table/query read back row by row, with row refs naming the rows' digests", async () => {
    expect(run.code, run.stderr).toBe(0);
    expect(run.result.datasetBack).toEqual({ name: "capitals", description: "Three capitals", length: 3 });
    expect(run.result.rowsBack).toEqual(CAPITALS);

    const p = sdkProject(client(service.url), P);
    const obj = await p.readRef(run.result.datasetRef);
    expect(obj).toMatchObject({ object_id: "capitals", kind: "object", base_object_class: "Dataset", leaf_object_class: "Dataset" });
    const val = obj.val as Record<string, unknown>;
    expect(val).toEqual({
      _type: "Dataset",
      _class_name: "Dataset",
      _bases: expect.any(Array),
      name: "capitals",
      description: "Three capitals",
      rows: expect.stringMatching(new RegExp(`^weave:///${P}/table/[A-Za-z0-9]+$`)),
    });
    const table = parseRef(val.rows as string);
    if (table.kind !== "table") throw new Error("rows is not a table ref");
    const rows = await p.tableRows(table.digest);
    expect(rows.map((r) => r.val)).toEqual(CAPITALS);
    expect(rows.map((r) => r.digest)).toEqual(CAPITALS.map(digestOf));
    expect(table.digest).toBe(tableDigest(rows.map((r) => r.digest)));
    expect(run.result.rowRefs).toEqual(rows.map((r) => `${run.result.datasetRef}/attr/rows/id/${r.digest}`));
  });
});
