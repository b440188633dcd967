import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { decodeProtobufRequest } from "../../services/otlp/decode.js";
import { mapSpans } from "../../services/otlp/mapSpan.js";
import { ATTRIBUTES_SQL, splitAttributes, wholeAttributes } from "../../services/store/calls/sharedAttributes.js";
import type { ClickHouseStore } from "../../services/store/clickhouse.js";
import { quoteString } from "../../services/store/sql.js";
import { protobufBody, postOtlp, type RequestSpec } from "../otlp/httpSupport.js";
import { storeOn } from "../support/database.js";
import { serviceForFile } from "../support/service.js";

/**
 * The text of a span's resource and scope (`attributes.otel.resource`, `.scope`) is stored once
 * per part (store/calls/sharedAttributes.ts): the attributes text comes back byte for byte, and
 * every filter, search and sort on them answers as before, for rows written so and rows written before.
 */

const json: fc.Arbitrary<JsonValue> = fc.jsonValue() as fc.Arbitrary<JsonValue>;
const object: fc.Arbitrary<JsonObject> = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 4 });
/** Attributes as spans have them (otel last, resource and scope last in it), and shapes around that. */
const attributes: fc.Arbitrary<JsonObject> = fc.oneof(
  object,
  fc.record({ families: object, otel: fc.record({ attributes: object, resource: json, scope: json }) }).map(({ families, otel }) => ({ ...families, otel })),
  fc.record({ otel: fc.record({ resource: json, scope: json }) }),
  fc.record({ otel: fc.record({ scope: json, resource: json }), after: json }),
  fc.record({ otel: fc.record({ resource: json, scope: json, later: json }) }),
);

describe("the attributes text in two columns", () => {
  it("gives back every text byte for byte, each column a JSON text", () => {
    fc.assert(
      fc.property(attributes, (value) => {
        const text = JSON.stringify(value);
        const stored = splitAttributes(value, text);
        expect(wholeAttributes(stored)).toBe(text);
        expect(() => JSON.parse(stored.attributes) as unknown).not.toThrow();
      }),
      { numRuns: 500 },
    );
  });

  it("cuts a span's resource and scope, and nothing of other attributes", () => {
    const resource = { service: { name: "travel-agent" } };
    const scope = { name: "agent.framework", version: "0.9.0" };
    const span = { operation: "chat", otel: { attributes: { gen_ai: { system: "openai" } }, resource, scope } };
    expect(splitAttributes(span, JSON.stringify(span))).toEqual({
      attributes: JSON.stringify({ operation: "chat", otel: { attributes: { gen_ai: { system: "openai" } } } }),
      attributes_shared: `,"resource":${JSON.stringify(resource)},"scope":${JSON.stringify(scope)}`,
    });
    const alone = { otel: { resource, scope } };
    expect(splitAttributes(alone, JSON.stringify(alone)).attributes).toBe('{"otel":{}}');
    const sdk = { weave: { client_version: "0.52.0" } };
    expect(splitAttributes(sdk, JSON.stringify(sdk))).toEqual({ attributes: JSON.stringify(sdk), attributes_shared: "" });
  });
});

const service = serviceForFile();
const P = "acme/shared-attributes";
const T0 = BigInt(Date.UTC(2026, 10, 3, 9, 0, 0)) * 1_000_000n;
const hex = (n: number, digits: number) => n.toString(16).padStart(digits, "0");

function exportOf(service_name: string, first: number): RequestSpec {
  return {
    resource: { "service.name": service_name, "host.name": `host-${service_name}`, "telemetry.sdk.language": "python" },
    scope: { name: "openinference.instrumentation.openai", version: "0.1.2" },
    spans: [0, 1].map((i) => ({
      traceId: hex(first + 1, 32),
      spanId: hex(first + i + 1, 16),
      name: `chat ${service_name} ${i}`,
      start: T0 + BigInt(first + i) * 1_000_000n,
      end: T0 + BigInt(first + i) * 1_000_000n + 500_000n,
      attributes: { "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini" },
    })),
  };
}

describe("spans' shared attributes through the service", () => {
  const exports = [exportOf("travel-agent", 0), exportOf("billing", 10)];
  /** What each span's attributes are, mapped in this process as the worker maps them: id → text. */
  const expected = new Map<string, string>();
  let store: ClickHouseStore;

  const calls = async (body: Record<string, unknown>) =>
    service.api.lines<{ id: string; attributes: JsonObject }>("/calls/stream_query", { project_id: P, columns: ["id", "attributes"], ...body });
  const ids = async (query: Record<string, unknown>) => (await calls({ query: { $expr: query } })).map((c) => c.id);

  beforeAll(async () => {
    store = await storeOn(service.database);
    for (const spec of exports) {
      const body = protobufBody(spec);
      expect((await postOtlp(service.url, body, { project: P })).status).toBe(200);
      for (const e of mapSpans(decodeProtobufRequest(body), { project_id: P, wb_user_id: "u", maxSpanBytes: 1 << 20 }).events) expected.set(e.id, JSON.stringify(e.attributes));
    }
    // A span stored before migration 51: its attributes whole, its resource's leaves among the others.
    const old = { otel: { attributes: {}, resource: { service: { name: "legacy" } }, scope: { name: "s", version: "1" } } };
    await store.command("old_row", {
      sql: `INSERT INTO calls (project_id, id, trace_id, op_name, started_at, attributes, inputs, json_paths, json_values, version)
            VALUES (${quoteString(P)}, 'old', 'old', 'old span', ${Number(T0 / 1000n) - 1_000_000}, ${quoteString(JSON.stringify(old))}, '{}',
                    ['attributes.otel.resource.service.name', 'attributes.otel.scope.name', 'attributes.otel.scope.version'], ['legacy', 's', '1'], 2000000000000000)`,
      params: {},
    });
    expected.set("old", JSON.stringify(old));
    // The spans are read once stored (the ingest answers once they are durable).
    for (let tries = 0; (await calls({})).length < 5 && tries < 200; tries++) await new Promise((r) => setTimeout(r, 50));
  });
  afterAll(async () => store.close());

  it("stores each span's resource and scope apart, and gives back its attributes text byte for byte", async () => {
    const rows = await store.rows<{ id: string; attributes: string; attributes_shared: string; text: string }>("read", {
      sql: `SELECT id, attributes, attributes_shared, ${ATTRIBUTES_SQL} AS text FROM calls FINAL WHERE project_id = ${quoteString(P)} ORDER BY id`,
      params: {},
    });
    for (const row of rows) {
      expect(row.text).toBe(expected.get(row.id));
      expect(wholeAttributes(row)).toBe(expected.get(row.id));
      if (row.id !== "old") expect(row.attributes_shared).toMatch(/^,"resource":\{.*"scope":\{/);
    }
    const read = await calls({});
    expect(Object.fromEntries(read.map((c) => [c.id, JSON.stringify(c.attributes)]))).toEqual(Object.fromEntries(expected));
  });

  it("filters, searches and sorts on the resource and scope as on any attribute, in rows of either form", async () => {
    const serviceName = { $getField: "attributes.otel.resource.service.name" };
    expect(await ids({ $eq: [serviceName, { $literal: "billing" }] })).toEqual([hex(11, 16), hex(12, 16)]);
    expect(await ids({ $eq: [serviceName, { $literal: "legacy" }] })).toEqual(["old"]);
    expect(await ids({ $contains: { input: { $getField: "attributes.otel.resource.host.name" }, substr: { $literal: "travel" } } })).toEqual([hex(1, 16), hex(2, 16)]);
    // The bare part is the whole text, its shared end included.
    expect(await ids({ $contains: { input: { $getField: "attributes" }, substr: { $literal: "host-billing" } } })).toEqual([hex(11, 16), hex(12, 16)]);
    expect(await ids({ $eq: [{ $getField: "attributes.otel.scope.version" }, { $literal: "0.1.2" }] })).toHaveLength(4);
    const sorted = await calls({ sort_by: [{ field: "attributes.otel.resource.service.name", direction: "desc" }, { field: "id", direction: "asc" }] });
    expect(sorted.map((c) => c.id)).toEqual([hex(1, 16), hex(2, 16), "old", hex(11, 16), hex(12, 16)]);
  });
});
