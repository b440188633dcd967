import { describe, it, expect } from "vitest";
import { decodeJsonRequest, OtlpDecodeError, type OtlpSpan } from "../../services/otlp/decode.js";
import { MAX_VALUE_DEPTH } from "../../services/otlp/json.js";
import { PARENT_ID, SPAN_ID, TRACE_ID } from "./support.js";

function requestWith(span: Record<string, unknown>): string {
  return JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] });
}

function onlySpan(body: string): OtlpSpan {
  const span = decodeJsonRequest(body).resources[0]?.scopes[0]?.spans[0];
  if (!span) throw new Error("no span decoded");
  return span;
}

function decodeError(body: string): string {
  try {
    decodeJsonRequest(body);
  } catch (error) {
    expect(error).toBeInstanceOf(OtlpDecodeError);
    return (error as Error).message;
  }
  throw new Error("expected an OtlpDecodeError");
}

describe("decodeJsonRequest", () => {
  it("reads an OTLP/JSON request with hex ids, string int64s, enum names and unknown fields", () => {
    const body = JSON.stringify({
      futureTopLevel: { anything: true },
      resourceSpans: [
        {
          resource: { attributes: [{ key: "service.name", value: { stringValue: "chat-api" } }], droppedAttributesCount: 1, entityRefs: [] },
          schemaUrl: "https://opentelemetry.io/schemas/1.26.0",
          scopeSpans: [
            {
              scope: { name: "my.lib", version: "2.1.0", attributes: [{ key: "scope.flag", value: { boolValue: true } }] },
              schemaUrl: "s",
              spans: [
                {
                  traceId: TRACE_ID.toUpperCase(),
                  spanId: SPAN_ID,
                  parentSpanId: PARENT_ID,
                  traceState: "vendor=1",
                  flags: 769,
                  name: "chat gpt-4o",
                  kind: "SPAN_KIND_CLIENT",
                  startTimeUnixNano: "1700000000123456789",
                  endTimeUnixNano: 1700000001000000000,
                  attributes: [
                    { key: "s", value: { stringValue: "text" } },
                    { key: "i.number", value: { intValue: 42 } },
                    { key: "i.string", value: { intValue: "-7" } },
                    { key: "i.big", value: { intValue: "9223372036854775807" } },
                    { key: "d", value: { doubleValue: 0.5 } },
                    { key: "d.string", value: { doubleValue: "2.5" } },
                    { key: "d.nan", value: { doubleValue: "NaN" } },
                    { key: "d.inf", value: { doubleValue: "Infinity" } },
                    { key: "arr", value: { arrayValue: { values: [{ stringValue: "a" }, { boolValue: true }] } } },
                    { key: "kv", value: { kvlistValue: { values: [{ key: "x", value: { intValue: "1" } }] } } },
                    { key: "bytes", value: { bytesValue: "AAH+/w==" } },
                    { key: "empty", value: {} },
                    { key: "missing" },
                    { key: "future", value: { newKindOfValue: 1 } },
                  ],
                  droppedAttributesCount: "3",
                  events: [{ timeUnixNano: "1700000000200000001", name: "e", attributes: [], unknownEventField: 1 }],
                  links: [{ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b8", flags: 256 }],
                  status: { code: "STATUS_CODE_ERROR", message: "rate limited", unknownStatusField: "x" },
                  someNewSpanField: [1, 2, 3],
                },
              ],
            },
          ],
        },
      ],
    });

    expect(decodeJsonRequest(body)).toEqual({
      resources: [
        {
          attributes: { "service.name": "chat-api" },
          droppedAttributesCount: 1,
          schemaUrl: "https://opentelemetry.io/schemas/1.26.0",
          scopes: [
            {
              scope: { name: "my.lib", version: "2.1.0", attributes: { "scope.flag": true }, droppedAttributesCount: 0 },
              schemaUrl: "s",
              spans: [
                {
                  traceId: TRACE_ID,
                  spanId: SPAN_ID,
                  traceState: "vendor=1",
                  parentSpanId: PARENT_ID,
                  flags: 769,
                  name: "chat gpt-4o",
                  kind: 3,
                  startTimeUnixNano: 1_700_000_000_123_456_789n,
                  endTimeUnixNano: 1_700_000_001_000_000_000n,
                  attributes: {
                    s: "text",
                    "i.number": 42,
                    "i.string": -7,
                    "i.big": "9223372036854775807",
                    d: 0.5,
                    "d.string": 2.5,
                    "d.nan": "NaN",
                    "d.inf": "Infinity",
                    arr: ["a", true],
                    kv: { x: 1 },
                    bytes: "AAH+/w==",
                    empty: null,
                    missing: null,
                    future: null,
                  },
                  droppedAttributesCount: 3,
                  events: [{ timeUnixNano: 1_700_000_000_200_000_001n, name: "e", attributes: {}, droppedAttributesCount: 0 }],
                  droppedEventsCount: 0,
                  links: [
                    {
                      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
                      spanId: "00f067aa0ba902b8",
                      traceState: "",
                      attributes: {},
                      droppedAttributesCount: 0,
                      flags: 256,
                    },
                  ],
                  droppedLinksCount: 0,
                  status: { code: 2, message: "rate limited" },
                },
              ],
            },
          ],
        },
      ],
    });
  });

  it("accepts enums as integers, names, and integer strings", () => {
    expect(onlySpan(requestWith({ kind: 2, status: { code: 1 } })).kind).toBe(2);
    expect(onlySpan(requestWith({ kind: "SPAN_KIND_SERVER" })).kind).toBe(2);
    expect(onlySpan(requestWith({ kind: "SPAN_KIND_CONSUMER" })).kind).toBe(5);
    expect(onlySpan(requestWith({ kind: "4" })).kind).toBe(4);
    expect(onlySpan(requestWith({ kind: 9 })).kind).toBe(9);
    expect(onlySpan(requestWith({ status: { code: "STATUS_CODE_OK" } })).status).toEqual({ code: 1, message: "" });
    expect(onlySpan(requestWith({ status: { code: 2 } })).status).toEqual({ code: 2, message: "" });
  });

  it("reads null as the default and accepts a Buffer body", () => {
    const span = onlySpan(requestWith({ traceId: null, kind: null, attributes: null, status: null, startTimeUnixNano: null }));
    expect([span.traceId, span.kind, span.attributes, span.status, span.startTimeUnixNano]).toEqual(["", 0, {}, { code: 0, message: "" }, 0n]);
    expect(decodeJsonRequest(Buffer.from("{}"))).toEqual({ resources: [] });
    expect(decodeJsonRequest('{"resourceSpans":[]}')).toEqual({ resources: [] });
  });

  it("lowercases hex ids and keeps a non-hex id as sent, for the mapping to reject", () => {
    const span = onlySpan(requestWith({ traceId: "0AF7651916CD43DD8448EB211C80319C", spanId: "t61rcWkgMzE=", parentSpanId: "" }));
    expect(span.traceId).toBe(TRACE_ID);
    expect(span.spanId).toBe("t61rcWkgMzE=");
    expect(span.parentSpanId).toBe("");
  });

  it("ignores snake_case keys, which are not OTLP/JSON", () => {
    const span = onlySpan(requestWith({ span_id: SPAN_ID, start_time_unix_nano: "5", name: "n" }));
    expect([span.spanId, span.startTimeUnixNano, span.name]).toEqual(["", 0n, "n"]);
  });

  it(`accepts attribute values nested ${MAX_VALUE_DEPTH} levels deep and rejects deeper ones`, () => {
    const nested = (levels: number): Record<string, unknown> =>
      levels === 1 ? { stringValue: "x" } : { arrayValue: { values: [nested(levels - 1)] } };
    const unwrap = (value: unknown, levels: number): unknown => (levels === 1 ? value : unwrap((value as unknown[])[0], levels - 1));
    const span = onlySpan(requestWith({ attributes: [{ key: "deep", value: nested(MAX_VALUE_DEPTH) }] }));
    expect(unwrap(span.attributes["deep"], MAX_VALUE_DEPTH)).toBe("x");
    expect(decodeError(requestWith({ attributes: [{ key: "deep", value: nested(MAX_VALUE_DEPTH + 1) }] }))).toMatch(
      /\.attributes\[0\]\.value(\.arrayValue\.values\[0\]){100}: nested deeper than 100 levels$/,
    );
  });

  it.each([
    ["not JSON", "{resourceSpans:", /^invalid JSON: /],
    ["an empty body", "", /^invalid JSON: /],
    ["a top-level array", "[]", /^request: expected an object$/],
    ["a top-level null", "null", /^request: expected an object$/],
    ["resourceSpans not an array", '{"resourceSpans":{}}', /^resourceSpans: expected an array$/],
    ["a span that is a string", '{"resourceSpans":[{"scopeSpans":[{"spans":["x"]}]}]}', /^resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]: expected an object$/],
    ["a non-integer time", requestWith({ startTimeUnixNano: "12.5" }), /^resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.startTimeUnixNano: expected an integer$/],
    ["a negative time", requestWith({ endTimeUnixNano: "-1" }), /\.endTimeUnixNano: expected an unsigned 64-bit integer$/],
    ["a time over 64 bits", requestWith({ endTimeUnixNano: "18446744073709551616" }), /\.endTimeUnixNano: expected an unsigned 64-bit integer$/],
    ["an unknown kind name", requestWith({ kind: "SPAN_KIND_WEIRD" }), /\.kind: expected one of SPAN_KIND_UNSPECIFIED, .* or an integer$/],
    ["a numeric id", requestWith({ traceId: 12 }), /\.traceId: expected a string$/],
    ["a name that is a number", requestWith({ name: 5 }), /\.name: expected a string$/],
    ["a bool attribute given as text", requestWith({ attributes: [{ key: "a", value: { boolValue: "yes" } }] }), /\.attributes\[0\]\.value\.boolValue: expected a boolean$/],
    ["an attribute without a string key", requestWith({ attributes: [{ key: 1, value: {} }] }), /\.attributes\[0\]\.key: expected a string$/],
    ["a double given as text", requestWith({ attributes: [{ key: "a", value: { doubleValue: "abc" } }] }), /\.attributes\[0\]\.value\.doubleValue: expected a number$/],
    ["a negative dropped count", requestWith({ droppedAttributesCount: -1 }), /\.droppedAttributesCount: expected an unsigned 32-bit integer$/],
    ["events not an array", requestWith({ events: {} }), /\.events: expected an array$/],
  ])("throws OtlpDecodeError for %s", (_name, body, message) => {
    expect(decodeError(body)).toMatch(message);
  });
});
