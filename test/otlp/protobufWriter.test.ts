/**
 * A normalized batch written as protobuf (how ingest logs an OTLP/JSON export) reads back to
 * the same batch, key order and `-0` included; a batch that protobuf cannot carry so is not
 * written.
 */
import fc from "fast-check";
import { isDeepStrictEqual } from "node:util";
import { describe, expect, it } from "vitest";
import type { OtlpAttributes, OtlpSpan, OtlpSpanBatch } from "../../services/otlp/batch.js";
import { decodeJsonRequest, decodeProtobufRequest } from "../../services/otlp/decode.js";
import { setOwn } from "../../services/otlp/nest.js";
import { encodeSpanBatch } from "../../services/otlp/protobufWriter.js";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { corpusBodies } from "./corpus.js";
import { jsonBody } from "./httpSupport.js";

/** The batch read back from its protobuf (which must be written). */
function readBack(batch: OtlpSpanBatch): OtlpSpanBatch {
  const body = encodeSpanBatch(batch);
  expect(body).not.toBeNull();
  return decodeProtobufRequest(body!);
}

/**
 * Node's strict deep equality (prototypes, own `__proto__` keys, `-0`), which is what the
 * mapping sees; vitest's `toStrictEqual` reports batches with own `__proto__` keys as
 * different where they are not.
 */
const expectSame = (actual: OtlpSpanBatch, expected: OtlpSpanBatch) => expect(isDeepStrictEqual(actual, expected), JSON.stringify(expected, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v))).toBe(true);

const objectOf = (entries: readonly [string, JsonValue][]): JsonObject => {
  const out: JsonObject = {};
  for (const [key, value] of entries) setOwn(out, key, value);
  return out;
};

const text = fc.string({ unit: "grapheme", maxLength: 12 });
const key = fc.oneof(text, fc.constantFrom("__proto__", "0", "7", "a.b", ""));
/** Numbers as a decoder leaves them: finite (a non-finite double is its name, a string). */
const number = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 53, 1e21, -1.5),
);
const { value } = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    fc.boolean(),
    number,
    fc.constant(null),
    fc.constantFrom("NaN", "Infinity", "aGVsbG8=", "x".repeat(200), "é".repeat(9000)),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.array(fc.tuple(key, tie("value")), { maxLength: 4 }).map(objectOf),
  ),
}));
const attributes: fc.Arbitrary<OtlpAttributes> = fc.array(fc.tuple(key, value), { maxLength: 5 }).map(objectOf);
const hexId = (bytes: number) => fc.oneof(fc.constant(""), fc.uint8Array({ minLength: bytes, maxLength: bytes }).map((b) => Buffer.from(b).toString("hex")));
const count = fc.oneof(fc.constant(0), fc.nat({ max: 0xffffffff }));
const time = fc.oneof(fc.constant(0n), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }));
const enumValue = fc.oneof(fc.integer({ min: 0, max: 5 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));

/** Records with the ordinary prototype, as the decoders make them (fast-check's have none by default). */
const record = <T>(model: { [K in keyof T]: fc.Arbitrary<T[K]> }): fc.Arbitrary<T> => fc.record(model, { noNullPrototype: true });

const span: fc.Arbitrary<OtlpSpan> = record({
  traceId: hexId(16),
  spanId: hexId(8),
  traceState: text,
  parentSpanId: hexId(8),
  flags: count,
  name: text,
  kind: enumValue,
  startTimeUnixNano: time,
  endTimeUnixNano: time,
  attributes,
  droppedAttributesCount: count,
  events: fc.array(record({ timeUnixNano: time, name: text, attributes, droppedAttributesCount: count }), { maxLength: 2 }),
  droppedEventsCount: count,
  links: fc.array(record({ traceId: hexId(16), spanId: hexId(8), traceState: text, attributes, droppedAttributesCount: count, flags: count }), { maxLength: 2 }),
  droppedLinksCount: count,
  status: record({ code: enumValue, message: text }),
});

const batch: fc.Arbitrary<OtlpSpanBatch> = record({
  resources: fc.array(
    record({
      attributes,
      droppedAttributesCount: count,
      schemaUrl: text,
      scopes: fc.array(
        record({
          scope: record({ name: text, version: text, attributes, droppedAttributesCount: count }),
          schemaUrl: text,
          spans: fc.array(span, { maxLength: 3 }),
        }),
        { maxLength: 2 },
      ),
    }),
    { maxLength: 2 },
  ),
});

/** A value nested `levels` deep (1: a plain value), in key-value lists. */
const nested = (levels: number): JsonValue => (levels === 1 ? "leaf" : { inner: nested(levels - 1) });

/** A batch of one span with one event whose attribute `deep` holds `value`. */
function withEventValue(value: JsonValue): OtlpSpanBatch {
  const base = decodeJsonRequest(jsonBody({ spans: [{ traceId: "ab".repeat(16), spanId: "cd".repeat(8), name: "s", start: 1n, end: 2n, attributes: {} }] }));
  const [resource] = base.resources;
  const [group] = resource!.scopes;
  const [only] = group!.spans;
  const spanWithEvent = { ...only!, events: [{ timeUnixNano: 1n, name: "e", attributes: { deep: value }, droppedAttributesCount: 0 }] };
  return { resources: [{ ...resource!, scopes: [{ ...group!, spans: [spanWithEvent] }] }] };
}

describe("a normalized batch written as protobuf", () => {
  it("reads back the same, for any batch the decoders can make", () => {
    fc.assert(
      fc.property(batch, (b) => {
        expectSame(readBack(b), b);
      }),
      { numRuns: 300 },
    );
  });

  it("reads back the same for every body of the decoder corpus", () => {
    for (const body of corpusBodies(80, 5)) {
      const decoded = decodeProtobufRequest(body);
      expectSame(readBack(decoded), decoded);
    }
  });

  it("keeps -0, the largest safe integers and numbers past them as they are", () => {
    const numbers = { negativeZero: -0, safe: Number.MAX_SAFE_INTEGER, past: 2 ** 53, big: 1e300, negative: -42, fraction: 0.1 };
    const back = readBack(withEventValue(numbers));
    const event = back.resources[0]!.scopes[0]!.spans[0]!.events[0]!;
    expect(Object.is((event.attributes["deep"] as JsonObject)["negativeZero"], -0)).toBe(true);
    expect(event.attributes["deep"]).toStrictEqual(numbers);
  });

  it("carries attribute values as deep as the protobuf reader reads them back (30 levels or more), and no deeper ones", () => {
    let deepest = 1;
    while (encodeSpanBatch(withEventValue(nested(deepest + 1))) !== null) deepest++;
    expect(deepest).toBeGreaterThanOrEqual(30);
    expectSame(readBack(withEventValue(nested(deepest))), withEventValue(nested(deepest)));
  });

  it("is not written when an id is not hex (kept as sent, for the mapping to reject)", () => {
    const b = decodeJsonRequest(jsonBody({ spans: [{ traceId: "not-hex", spanId: "cd".repeat(8), name: "s", start: 1n, end: 2n, attributes: {} }] }));
    expect(b.resources[0]!.scopes[0]!.spans[0]!.traceId).toBe("not-hex");
    expect(encodeSpanBatch(b)).toBeNull();
  });
});
