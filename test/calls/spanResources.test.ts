/**
 * The split of a span's attributes into what its row keeps and its resource and scope, stored
 * once (store/calls/spanResources.ts): the two texts join back to the attributes' text byte for
 * byte, and the two sets of leaves are the attributes' leaves.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { JsonObject } from "../../services/json.js";
import { flattenCallJson } from "../../services/store/calls/flatten.js";
import { isSharedLeafPath, splitSpanResource, withResource } from "../../services/store/calls/spanResources.js";

const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<JsonObject[string]>;
const object = fc.dictionary(fc.string({ maxLength: 6 }), json, { maxKeys: 5 }) as fc.Arbitrary<JsonObject>;
/** A span's call attributes as otlp/mapSpan.ts makes them: families, then `otel` last. */
const spanAttributes = fc.record({ families: object, attributes: object, resource: object, scope: object }).map(({ families, attributes, resource, scope }) => {
  const out: JsonObject = { ...families };
  delete out["otel"];
  out["otel"] = { attributes, resource, scope };
  return out;
});

const leavesOf = (attributes: JsonObject) => flattenCallJson({ attributes, inputs: undefined, output: undefined, summary: undefined });

describe("a span's resource split from its attributes", () => {
  it("joins back to the attributes' text, byte for byte", () => {
    fc.assert(
      fc.property(spanAttributes, (attributes) => {
        const split = splitSpanResource(attributes)!;
        expect(split).not.toBeNull();
        expect(withResource(JSON.stringify(split.own), split.resource.text)).toBe(JSON.stringify(attributes));
      }),
    );
  });

  it("keeps the attributes' leaves, the resource's in its own row", () => {
    fc.assert(
      fc.property(spanAttributes, (attributes) => {
        const split = splitSpanResource(attributes)!;
        const whole = leavesOf(attributes);
        const pairs = (leaves: { json_paths: string[]; json_values: string[] }) => leaves.json_paths.map((p, i) => [p, leaves.json_values[i]]);
        const own = leavesOf(split.own);
        const resource = split.resource.leaves();
        expect(pairs(own)).toEqual(pairs(whole).filter(([p]) => !isSharedLeafPath(p!)));
        expect(pairs(resource)).toEqual(pairs(whole).filter(([p]) => isSharedLeafPath(p!)));
      }),
    );
  });

  it("names equal resources by one hash, and different ones by two", () => {
    const call = (service: string): JsonObject => ({ otel: { attributes: {}, resource: { service: { name: service } }, scope: { name: "s" } } });
    const [a, again, b] = [call("a"), call("a"), call("b")].map((attributes) => splitSpanResource(attributes)!.resource.hash);
    expect(a).toBe(again);
    expect(a).not.toBe(b);
  });

  it("leaves attributes of any other shape whole", () => {
    const otel = { attributes: {}, resource: {}, scope: {} };
    expect(splitSpanResource({ env: "prod" })).toBeNull();
    expect(splitSpanResource({ otel, after: 1 })).toBeNull();
    expect(splitSpanResource({ otel: { resource: {}, attributes: {}, scope: {} } })).toBeNull();
    expect(splitSpanResource({ otel: { ...otel, extra: 1 } })).toBeNull();
    expect(splitSpanResource({ otel: { attributes: {}, resource: "r", scope: {} } })).toBeNull();
  });
});
