/**
 * Ingest checks a protobuf export from a read without its text (`spansWithoutText`,
 * `checkEncodedSpans`): it must reject the bodies a full read rejects, and accept only what
 * `checkSpans` of the full read accepts, or the worker's mapping of the logged export would
 * not give the calls that were acknowledged.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeProtobufRequest, OtlpDecodeError, spansWithoutText, type OtlpSpan, type OtlpSpanBatch } from "../../services/otlp/decode.js";
import { checkEncodedSpans, checkSpans, mostCountedBytes, spanBytes } from "../../services/otlp/mapSpan.js";
import { corpusBodies, encodeRequest } from "./corpus.js";

const BODIES = corpusBodies(60, 41);

const spansOf = (batch: OtlpSpanBatch): OtlpSpan[] => batch.resources.flatMap((r) => r.scopes.flatMap((g) => g.spans));

function read<T>(decode: () => T): T | "rejected" {
  try {
    return decode();
  } catch (error) {
    expect(error).toBeInstanceOf(OtlpDecodeError);
    return "rejected";
  }
}

/** Both reads of the body agree: both reject it, or the check without text is null or the full check, at limits around its spans' sizes. */
function agrees(body: Buffer): void {
  const full = read(() => decodeProtobufRequest(body));
  const quick = read(() => spansWithoutText(body));
  if (full === "rejected" || quick === "rejected") {
    expect(quick).toBe(full);
    return;
  }
  const spans = spansOf(full);
  expect(quick.encodedLengths).toHaveLength(spans.length);
  spans.forEach((span, i) => expect(spanBytes(span)).toBeLessThanOrEqual(mostCountedBytes(quick.encodedLengths[i]!)));
  const limits = [1 << 20, ...spans.map(spanBytes), ...quick.encodedLengths.map(mostCountedBytes)];
  for (const limit of limits) {
    const checked = checkEncodedSpans(quick, limit);
    if (checked !== null) expect(checked).toEqual(checkSpans(full, limit));
  }
}

const damage = fc.record({ at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }), cut: fc.boolean() });

describe("an export checked without its text", () => {
  it("agrees with the full check on every corpus body, and tells on the bench's exports", () => {
    for (const body of BODIES) agrees(body);
    for (const body of BODIES.slice(-2)) {
      const checked = checkEncodedSpans(spansWithoutText(body), 1 << 20);
      expect(checked).toEqual(checkSpans(decodeProtobufRequest(body), 1 << 20));
      expect(checked?.accepted).toBe(512);
    }
  });

  it("leaves an export with an invalid span or a span near the limit to the full check", () => {
    const valid = { trace_id: Buffer.alloc(16, 1), span_id: Buffer.alloc(8, 2), name: "s", start_time_unix_nano: "1", end_time_unix_nano: "2" };
    const withSpans = (...spans: object[]) => encodeRequest({ resource_spans: [{ scope_spans: [{ spans }] }] });
    const invalid = spansWithoutText(withSpans(valid, { ...valid, span_id: Buffer.alloc(8) }));
    expect(checkEncodedSpans(invalid, 1 << 20)).toBeNull();
    const large = spansWithoutText(withSpans(valid, { ...valid, name: "x".repeat(1000) }));
    expect(checkEncodedSpans(large, 1 << 20)).toMatchObject({ accepted: 2, rejected: 0 });
    expect(checkEncodedSpans(large, 4_000)).toBeNull();
  });

  it("counts no span beyond its bound where spanBytes counts most per byte (empty links, events and values, invalid UTF-8, base64)", () => {
    const ids = (i: number) => ({ trace_id: Buffer.alloc(16, 1), span_id: Buffer.alloc(8, 2 + i), start_time_unix_nano: "1", end_time_unix_nano: "2" });
    const spans = [
      { ...ids(0), links: Array.from({ length: 200 }, () => ({})) },
      { ...ids(1), events: Array.from({ length: 200 }, () => ({})) },
      { ...ids(2), attributes: [{ key: "a", value: { array_value: { values: Array.from({ length: 200 }, () => ({})) } } }] },
      { ...ids(3), attributes: Array.from({ length: 50 }, (_, i) => ({ key: String.fromCharCode(65 + (i % 26)) + String(i), value: {} })) },
      { ...ids(4), attributes: [{ key: "b", value: { bytes_value: Buffer.from([1]) } }] },
      { ...ids(5), name: "\u0001".repeat(24) },
    ];
    const body = encodeRequest({ resource_spans: [{ scope_spans: [{ spans }] }] });
    const name = body.indexOf(Buffer.alloc(24, 1));
    body.fill(0xff, name, name + 24); // the last span's name: bytes that are not UTF-8
    expect(spansOf(decodeProtobufRequest(body))[5]!.name).toBe("\uFFFD".repeat(24));
    agrees(body);
  });

  it("agrees with the full check on damaged bodies", () => {
    const small = BODIES.slice(0, -2);
    fc.assert(
      fc.property(fc.nat(small.length - 1), fc.array(damage, { minLength: 1, maxLength: 4 }), (which, changes) => {
        let body = Buffer.from(small[which]!);
        for (const { at, byte, cut } of changes) {
          if (body.length === 0) break;
          if (cut) body = body.subarray(0, at % body.length);
          else body[at % body.length] = byte;
        }
        agrees(body);
      }),
      { numRuns: 2000 },
    );
  });
});
