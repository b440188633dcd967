/**
 * A span's resource and scope stored once per distinct pair (store/calls/spanResources.ts):
 * spans of two services, exported by the OpenTelemetry JS SDK, read back whole, and filters,
 * sorts and searches on their resource answer as they did when every row held it; each row
 * keeps a hash in place of the pair. A call whose attributes hold a resource of another shape
 * (an SDK call's, as every row stored before) is stored whole and found the same way.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_LEAF_CHARS } from "../../services/store/calls/flatten.js";
import { ParamBuilder } from "../../services/store/sql.js";
import { storeOn } from "../support/database.js";
import { serviceForFile } from "../support/service.js";
import { exportSdkSpans } from "./httpSupport.js";

type Call = { id: string; op_name: string; display_name: string | null; attributes: Record<string, unknown> };

const P = "acme/span-resources";
const service = serviceForFile();
const api = service.api;

/** A resource value longer than a leaf keeps: `$eq` on it must still be exact. */
const LONG_NOTE = `${"n".repeat(MAX_LEAF_CHARS)}-end`;
const SCOPE = { name: "resources.test", version: "1.0.0" };
const RESOURCES = {
  a: { "service.name": "svc-a", "host.note": LONG_NOTE },
  b: { "service.name": "svc-b", "deployment.environment": "test" },
};

/** Exports one span per name from a provider with `resource`; the span ids. */
const exportSpans = (resource: Record<string, string>, names: readonly string[]) =>
  exportSdkSpans(service.url, P, resource, SCOPE, names.map((name) => ({ name, attributes: { "app.step": name } })));

const query = (body: Record<string, unknown>) => api.lines<Call>("/calls/stream_query", { project_id: P, ...body });
const field = (path: string) => ({ $getField: path });
const literal = (value: string) => ({ $literal: value });
const idsWhere = async (expr: Record<string, unknown>) => (await query({ query: { $expr: expr } })).map((c) => c.id).sort();

let a: string[] = [];
let b: string[] = [];

beforeAll(async () => {
  a = await exportSpans(RESOURCES.a, ["a1", "a2", "a3"]);
  b = await exportSpans(RESOURCES.b, ["b1", "b2"]);
});

describe("a span's resource and scope, stored once", () => {
  it("reads every span's resource and scope back whole", async () => {
    const calls = await query({});
    expect(calls).toHaveLength(5);
    for (const call of calls) {
      const resource = a.includes(call.id) ? { service: { name: "svc-a" }, host: { note: LONG_NOTE } } : { service: { name: "svc-b" }, deployment: { environment: "test" } };
      expect(call.attributes).toEqual({ otel: { attributes: { app: { step: call.op_name } }, resource, scope: SCOPE } });
    }
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: b[0] });
    expect(call.attributes["otel"]).toMatchObject({ resource: { service: { name: "svc-b" } }, scope: SCOPE });
  });

  it("filters, sorts and searches on the resource and scope", async () => {
    expect(await idsWhere({ $eq: [field("attributes.otel.resource.service.name"), literal("svc-b")] })).toEqual([...b].sort());
    expect(await idsWhere({ $eq: [field("attributes.otel.scope.name"), literal(SCOPE.name)] })).toEqual([...a, ...b].sort());
    expect(await idsWhere({ $eq: [field("attributes.otel.resource.host.note"), literal(LONG_NOTE)] })).toEqual([...a].sort());
    expect(await idsWhere({ $eq: [field("attributes.otel.resource.host.note"), literal(`${LONG_NOTE}!`)] })).toEqual([]);
    expect(await idsWhere({ $contains: { input: field("attributes"), substr: literal('"environment":"test"') } })).toEqual([...b].sort());
    expect(await idsWhere({ $not: [{ $eq: [field("attributes.otel.resource.service.name"), literal("svc-a")] }] })).toEqual([...b].sort());
    const sorted = await query({ sort_by: [{ field: "attributes.otel.resource.service.name", direction: "desc" }, { field: "op_name", direction: "asc" }] });
    expect(sorted.map((c) => c.op_name)).toEqual(["b1", "b2", "a1", "a2", "a3"]);
  });

  it("keeps one row per pair, and a hash in each span's row instead", async () => {
    const store = await storeOn(service.database);
    try {
      const pb = new ParamBuilder();
      const project = pb.str(P);
      const [resources] = await store.rows<{ pairs: string }>("test_span_resources", { sql: `SELECT uniqExact(hash) AS pairs FROM span_resources WHERE project_id = ${project}`, params: pb.params });
      expect(Number(resources!.pairs)).toBe(2);
      const [rows] = await store.rows<{ hashed: string; holding: string }>("test_span_rows", {
        sql: `SELECT countIf(resource_hash != '') AS hashed, countIf(position(attributes, 'svc-') > 0 OR has(json_values, 'svc-a')) AS holding FROM calls WHERE project_id = ${project}`,
        params: pb.params,
      });
      expect({ hashed: Number(rows!.hashed), holding: Number(rows!.holding) }).toEqual({ hashed: 5, holding: 0 });
    } finally {
      await store.close();
    }
  });

  it("keeps a span's resource when the worker writes its call again", async () => {
    expect(await api.json("/call/update", { project_id: P, call_id: a[0], display_name: "renamed" })).toEqual({});
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: a[0] });
    expect(call.display_name).toBe("renamed");
    expect(call.attributes).toEqual({ otel: { attributes: { app: { step: "a1" } }, resource: { service: { name: "svc-a" }, host: { note: LONG_NOTE } }, scope: SCOPE } });
  });

  it("finds a call whose attributes hold a resource of another shape, stored whole", async () => {
    const started_at = new Date(Date.UTC(2026, 0, 2)).toISOString();
    const attributes = { otel: { resource: { service: { name: "svc-c" } } } };
    await api.json("/call/start", { start: { project_id: P, id: "sdk-call", trace_id: "sdk-trace", op_name: "sdk op", started_at, attributes, inputs: {} } });
    expect(await idsWhere({ $eq: [field("attributes.otel.resource.service.name"), literal("svc-c")] })).toEqual(["sdk-call"]);
    expect(await idsWhere({ $contains: { input: field("attributes"), substr: literal("svc-c") } })).toEqual(["sdk-call"]);
    const { call } = await api.json<{ call: Call }>("/call/read", { project_id: P, id: "sdk-call" });
    expect(call.attributes).toEqual(attributes);
  });
});
