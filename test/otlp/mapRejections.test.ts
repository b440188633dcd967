import { describe, it, expect } from "vitest";
import { decodeJsonRequest } from "../../services/otlp/decode.js";
import { checkSpans, MAX_REJECTION_REASONS, mapSpans, spanBytes } from "../../services/otlp/mapSpan.js";
import type { OtlpSpan } from "../../services/otlp/decode.js";
import { batchOf, CTX, END_NS, makeSpan, SPAN_ID, START_NS } from "./support.js";

/** The reasons for the span's rejection; checking it without mapping (what ingest does) finds the same. */
function rejectionOf(span: OtlpSpan): string[] {
  const result = mapSpans(batchOf([span]), CTX);
  expect([result.events.length, result.rejected]).toEqual([0, 1]);
  expect(checkSpans(batchOf([span]), CTX.maxSpanBytes)).toEqual({ accepted: 0, firstAcceptedId: null, rejected: 1, errors: result.errors });
  return result.errors;
}

describe("mapSpans: rejected spans", () => {
  it.each([
    ["an all-zero trace id", { traceId: "00000000000000000000000000000000" }, "invalid trace id"],
    ["a short trace id", { traceId: "0af7651916cd43dd" }, "invalid trace id"],
    ["a missing trace id", { traceId: "" }, "invalid trace id"],
    ["an all-zero span id", { spanId: "0000000000000000" }, "invalid span id"],
    ["a 16-byte span id", { spanId: "0af7651916cd43dd8448eb211c80319c" }, "invalid span id"],
    ["a bad parent id", { parentSpanId: "abcd" }, "invalid parent span id"],
    ["an end before the start", { endTimeUnixNano: START_NS - 1n }, "ends before it starts"],
    ["an end past exact microseconds", { endTimeUnixNano: 2n ** 64n - 1n }, "end time out of range"],
  ] as const)("rejects %s", (_name, overrides, reason) => {
    const span = makeSpan({ name: "llm", ...overrides });
    expect(rejectionOf(span)).toEqual([`span "llm" (${span.spanId || "no span id"}): ${reason}`]);
  });

  it("rejects a JSON span whose ids are base64 rather than hex", () => {
    const body = JSON.stringify({
      resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: "CvdlGRbNQ92ESOshHIAxnA==", spanId: "t61rcWkgMzE=", name: "b64" }] }] }],
    });
    expect(mapSpans(decodeJsonRequest(body), CTX)).toEqual({ events: [], rejected: 1, errors: ['span "b64" (t61rcWkgMzE=): invalid trace id'] });
  });

  it("rejects a span over maxSpanBytes, and accepts it at exactly the limit", () => {
    const span = makeSpan({ attributes: { "input.value": "x".repeat(500) } });
    const size = spanBytes(span);
    expect(size).toBeGreaterThan(500);
    expect(mapSpans(batchOf([span]), { ...CTX, maxSpanBytes: size }).rejected).toBe(0);
    expect(mapSpans(batchOf([span]), { ...CTX, maxSpanBytes: size - 1 })).toEqual({
      events: [],
      rejected: 1,
      errors: [`span "chat gpt-4o" (${SPAN_ID}): ${size} bytes, over the limit of ${size - 1}`],
    });
  });

  it("counts the span's UTF-8 bytes: name, attribute keys and values, events, links", () => {
    const base = spanBytes(makeSpan({ name: "", attributes: {} }));
    expect(spanBytes(makeSpan({ name: "é", attributes: {} })) - base).toBe(2);
    expect(spanBytes(makeSpan({ name: "", attributes: { "input.value": "a".repeat(300) } })) - base).toBe(11 + 300);
    expect(spanBytes(makeSpan({ name: "", attributes: { "input.value": "é".repeat(300) } })) - base).toBe(11 + 600);
    expect(spanBytes(makeSpan({ name: "", attributes: { n: 1, b: true, z: null, l: ["ab", 2], o: { k: "v" } } })) - base).toBe(1 + 8 + 1 + 8 + 1 + 8 + 1 + 2 + 8 + 1 + 1 + 1);
    const withEvent = makeSpan({ name: "", attributes: {}, events: [{ timeUnixNano: 1n, name: "ev", attributes: { k: "vv" }, droppedAttributesCount: 0 }] });
    expect(spanBytes(withEvent) - base).toBe(16 + 2 + 3);
    const ascii = makeSpan({ attributes: { "input.value": "a".repeat(300) } });
    const wide = makeSpan({ attributes: { "input.value": "é".repeat(300) } });
    expect(mapSpans(batchOf([wide]), { ...CTX, maxSpanBytes: spanBytes(ascii) }).rejected).toBe(1);
    expect(mapSpans(batchOf([ascii]), { ...CTX, maxSpanBytes: spanBytes(ascii) }).rejected).toBe(0);
  });

  it("rejects spans one by one and keeps the others", () => {
    const spans = [
      makeSpan({ spanId: "1111111111111111" }),
      makeSpan({ spanId: "2222222222222222", traceId: "" }),
      makeSpan({ spanId: "3333333333333333" }),
      makeSpan({ spanId: "4444444444444444", endTimeUnixNano: 0n }),
    ];
    const result = mapSpans(batchOf(spans), CTX);
    expect(result.events.map((e) => e.id)).toEqual(["1111111111111111", "3333333333333333"]);
    expect(result.rejected).toBe(2);
    expect(result.errors).toEqual([
      'span "chat gpt-4o" (2222222222222222): invalid trace id',
      'span "chat gpt-4o" (4444444444444444): ends before it starts',
    ]);
    expect(checkSpans(batchOf(spans), CTX.maxSpanBytes)).toEqual({ accepted: 2, firstAcceptedId: "1111111111111111", rejected: 2, errors: result.errors });
    expect(checkSpans(batchOf(spans.slice(1)), CTX.maxSpanBytes)).toMatchObject({ accepted: 1, firstAcceptedId: "3333333333333333" });
  });

  it(`keeps at most ${MAX_REJECTION_REASONS} reasons but counts every rejection`, () => {
    const spans = Array.from({ length: 25 }, () => makeSpan({ traceId: "", endTimeUnixNano: END_NS }));
    const result = mapSpans(batchOf(spans), CTX);
    expect([result.rejected, result.errors.length]).toEqual([25, 10]);
  });

  it("shortens long names and ids in reasons", () => {
    const span = makeSpan({ name: "n".repeat(100), spanId: "z".repeat(100) });
    expect(rejectionOf(span)).toEqual([`span "${"n".repeat(64)}" (${"z".repeat(64)}): invalid span id`]);
  });
});
