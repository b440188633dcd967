import { describe, it, expect } from "vitest";
import { ClientError } from "../../services/errors.js";
import { decodeProtobufRequest, OtlpDecodeError, type OtlpSpanBatch } from "../../services/otlp/decode.js";
import { ExportTraceServiceRequest } from "../../services/otlp/protobuf.js";
import { PARENT_ID, SPAN_ID, TRACE_ID } from "./support.js";

function encode(request: Record<string, unknown>): Buffer {
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(request)).finish());
}

const hex = (id: string) => Buffer.from(id, "hex");
const kv = (key: string, value: Record<string, unknown>) => ({ key, value });

describe("decodeProtobufRequest", () => {
  it("reads every field of a request built from the same .proto", () => {
    const body = encode({
      resource_spans: [
        {
          resource: { attributes: [kv("service.name", { string_value: "chat-api" })], dropped_attributes_count: 1 },
          schema_url: "https://opentelemetry.io/schemas/1.26.0",
          scope_spans: [
            {
              scope: { name: "my.lib", version: "2.1.0", attributes: [kv("scope.flag", { bool_value: true })], dropped_attributes_count: 2 },
              schema_url: "https://opentelemetry.io/schemas/1.25.0",
              spans: [
                {
                  trace_id: hex(TRACE_ID),
                  span_id: hex(SPAN_ID),
                  trace_state: "vendor=1",
                  parent_span_id: hex(PARENT_ID),
                  flags: 0x301,
                  name: "chat gpt-4o",
                  kind: 3,
                  start_time_unix_nano: "1700000000123456789",
                  end_time_unix_nano: "18446744073709551615",
                  attributes: [
                    kv("s", { string_value: "text" }),
                    kv("empty.string", { string_value: "" }),
                    kv("b", { bool_value: false }),
                    kv("i", { int_value: 42 }),
                    kv("i.negative", { int_value: "-5" }),
                    kv("i.zero", { int_value: 0 }),
                    kv("i.big", { int_value: "9007199254740993" }),
                    kv("i.min", { int_value: "-9223372036854775808" }),
                    kv("d", { double_value: 0.25 }),
                    kv("d.nan", { double_value: Number.NaN }),
                    kv("d.inf", { double_value: Number.NEGATIVE_INFINITY }),
                    kv("arr", { array_value: { values: [{ string_value: "a" }, { int_value: 1 }, {}] } }),
                    kv("kv", { kvlist_value: { values: [kv("x", { double_value: 1.5 }), kv("y", { array_value: { values: [] } })] } }),
                    kv("bytes", { bytes_value: Buffer.from([0, 1, 254, 255]) }),
                    kv("unset", {}),
                  ],
                  dropped_attributes_count: 3,
                  events: [
                    {
                      time_unix_nano: "1700000000200000001",
                      name: "exception",
                      attributes: [kv("exception.message", { string_value: "boom" })],
                      dropped_attributes_count: 4,
                    },
                  ],
                  dropped_events_count: 5,
                  links: [
                    {
                      trace_id: hex("4bf92f3577b34da6a3ce929d0e0e4736"),
                      span_id: hex("00f067aa0ba902b8"),
                      trace_state: "a=b",
                      attributes: [kv("link.kind", { string_value: "follows" })],
                      dropped_attributes_count: 6,
                      flags: 0x100,
                    },
                  ],
                  dropped_links_count: 7,
                  status: { code: 2, message: "rate limited" },
                },
              ],
            },
          ],
        },
      ],
    });

    const expected: OtlpSpanBatch = {
      resources: [
        {
          attributes: { "service.name": "chat-api" },
          droppedAttributesCount: 1,
          schemaUrl: "https://opentelemetry.io/schemas/1.26.0",
          scopes: [
            {
              scope: { name: "my.lib", version: "2.1.0", attributes: { "scope.flag": true }, droppedAttributesCount: 2 },
              schemaUrl: "https://opentelemetry.io/schemas/1.25.0",
              spans: [
                {
                  traceId: TRACE_ID,
                  spanId: SPAN_ID,
                  traceState: "vendor=1",
                  parentSpanId: PARENT_ID,
                  flags: 0x301,
                  name: "chat gpt-4o",
                  kind: 3,
                  startTimeUnixNano: 1_700_000_000_123_456_789n,
                  endTimeUnixNano: 18_446_744_073_709_551_615n,
                  attributes: {
                    s: "text",
                    "empty.string": "",
                    b: false,
                    i: 42,
                    "i.negative": -5,
                    "i.zero": 0,
                    "i.big": "9007199254740993",
                    "i.min": "-9223372036854775808",
                    d: 0.25,
                    "d.nan": "NaN",
                    "d.inf": "-Infinity",
                    arr: ["a", 1, null],
                    kv: { x: 1.5, y: [] },
                    bytes: "AAH+/w==",
                    unset: null,
                  },
                  droppedAttributesCount: 3,
                  events: [
                    {
                      timeUnixNano: 1_700_000_000_200_000_001n,
                      name: "exception",
                      attributes: { "exception.message": "boom" },
                      droppedAttributesCount: 4,
                    },
                  ],
                  droppedEventsCount: 5,
                  links: [
                    {
                      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
                      spanId: "00f067aa0ba902b8",
                      traceState: "a=b",
                      attributes: { "link.kind": "follows" },
                      droppedAttributesCount: 6,
                      flags: 0x100,
                    },
                  ],
                  droppedLinksCount: 7,
                  status: { code: 2, message: "rate limited" },
                },
              ],
            },
          ],
        },
      ],
    };
    expect(decodeProtobufRequest(body)).toEqual(expected);
  });

  it("reads absent fields as their defaults", () => {
    const body = encode({ resource_spans: [{ scope_spans: [{ spans: [{ name: "bare" }] }] }] });
    expect(decodeProtobufRequest(body)).toEqual({
      resources: [
        {
          attributes: {},
          droppedAttributesCount: 0,
          schemaUrl: "",
          scopes: [
            {
              scope: { name: "", version: "", attributes: {}, droppedAttributesCount: 0 },
              schemaUrl: "",
              spans: [
                {
                  traceId: "",
                  spanId: "",
                  traceState: "",
                  parentSpanId: "",
                  flags: 0,
                  name: "bare",
                  kind: 0,
                  startTimeUnixNano: 0n,
                  endTimeUnixNano: 0n,
                  attributes: {},
                  droppedAttributesCount: 0,
                  events: [],
                  droppedEventsCount: 0,
                  links: [],
                  droppedLinksCount: 0,
                  status: { code: 0, message: "" },
                },
              ],
            },
          ],
        },
      ],
    });
  });

  it("reads an empty body as an empty request", () => {
    expect(decodeProtobufRequest(Buffer.alloc(0))).toEqual({ resources: [] });
  });

  it("keeps later duplicates of an attribute key and keeps __proto__ as a plain key", () => {
    const body = encode({
      resource_spans: [
        {
          scope_spans: [
            {
              spans: [
                {
                  attributes: [
                    kv("k", { string_value: "first" }),
                    kv("k", { string_value: "second" }),
                    kv("__proto__", { string_value: "plain" }),
                  ],
                },
              ],
            },
          ],
        },
      ],
    });
    const attributes = decodeProtobufRequest(body).resources[0]?.scopes[0]?.spans[0]?.attributes;
    expect(JSON.stringify(attributes)).toBe('{"k":"second","__proto__":"plain"}');
    expect(Object.getPrototypeOf(attributes)).toBe(Object.prototype);
  });

  it("throws OtlpDecodeError for values nested past protobufjs's recursion limit", () => {
    const field = (number: number, payload: Buffer): Buffer => {
      const length: number[] = [];
      for (let n = payload.length; ; n >>>= 7) {
        if (n < 0x80) {
          length.push(n);
          break;
        }
        length.push((n & 0x7f) | 0x80);
      }
      return Buffer.concat([Buffer.from([(number << 3) | 2, ...length]), payload]);
    };
    let value = field(1, Buffer.from("x")); // AnyValue.string_value
    for (let i = 0; i < 200; i++) value = field(5, field(1, value)); // AnyValue.array_value.values[0]
    const keyValue = Buffer.concat([field(1, Buffer.from("k")), field(2, value)]);
    const body = field(1, field(2, field(2, field(9, keyValue)))); // resource_spans.scope_spans.spans.attributes
    expect(() => decodeProtobufRequest(body)).toThrow(OtlpDecodeError);
    expect(() => decodeProtobufRequest(body)).toThrow("maximum nesting depth exceeded");
  });

  it.each([
    ["a length prefix past the end", Buffer.from([0x0a, 0x05, 0x01])],
    ["an invalid wire type", Buffer.from([0x0f])],
    ["a truncated varint", Buffer.from([0x08, 0xff])],
    ["JSON sent as protobuf", Buffer.from('{"resourceSpans":[]}')],
  ])("throws OtlpDecodeError (a 400 ClientError) for %s", (_name, body) => {
    let caught: unknown;
    try {
      decodeProtobufRequest(body);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(OtlpDecodeError);
    expect(caught).toBeInstanceOf(ClientError);
    expect((caught as ClientError).status).toBe(400);
    expect((caught as Error).message).toMatch(/^invalid protobuf ExportTraceServiceRequest: /);
  });
});
