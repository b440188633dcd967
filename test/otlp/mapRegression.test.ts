/**
 * Decoding and mapping the corpus (corpus.ts) gives exactly the stored events it gave before
 * the decode and mapping were made cheaper: the digest of their JSON, line by line, was taken
 * from the implementation of 2026-11-24 (protobufjs decode, the first mapSpan). Since, the
 * dump leaves out what the call holds: it is compared in the form it was stored in then, made
 * from what `fullOtelDump` gives back and the markers that named the call's attributes.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_PARSED_DEPTH, parseJsonLooking } from "../../services/otlp/attributes.js";
import type { JsonObject, JsonValue } from "../../services/json.js";
import { fullOtelDump, IN_CALL_ATTRIBUTES, IN_CALL_RESOURCE } from "../../services/otlp/otelDump.js";
import type { CallCompleteEvent } from "../../services/queue/events.js";
import { decodeProtobufRequest } from "../../services/otlp/decode.js";
import { mapSpans, spanBytes } from "../../services/otlp/mapSpan.js";
import { batchOf, makeSpan } from "./support.js";
import { corpusBodies } from "./corpus.js";

const CTX = { project_id: "acme/chat", wb_user_id: "u", maxSpanBytes: 1200 };
const DIGEST = "bd34040ae1e828fbf7d2551fff6af82d6c1e2452f0eebc7f25670c10a8d32538";

describe("OTLP decode + map regression", () => {
  it("maps 300 random requests and two bench requests to the same JSON as before, byte for byte", () => {
    const lines = corpusBodies(300).map((body) => {
      const mapped = mapSpans(decodeProtobufRequest(body), CTX);
      return JSON.stringify({ ...mapped, events: mapped.events.map((call) => ({ ...call, otel_dump: dumpAsStoredBefore(call) })) });
    });
    expect(createHash("sha256").update(lines.join("\n")).digest("hex")).toBe(DIGEST);
  });
});

/** The call's dump as it was stored before it left out the call's ids, name, scope and times (the same keys, in the same order). */
function dumpAsStoredBefore(call: CallCompleteEvent): JsonObject | null {
  const stored = call.otel_dump;
  if (stored === null) return null;
  const full = fullOtelDump(stored, call);
  const fullScope = full["scope"] as JsonObject;
  const scope: JsonObject = {};
  if (fullScope["name"] !== "") scope["name"] = fullScope["name"]!;
  if (fullScope["version"] !== "") scope["version"] = fullScope["version"]!;
  Object.assign(scope, stored["scope"] ?? {});
  // Since, the dump leaves out the attributes the call holds, which it named by markers.
  const resource = (stored["resource"] ?? {}) as JsonObject;
  const before: JsonObject = { resource: "attributes" in resource ? resource : { attributes: IN_CALL_RESOURCE, ...resource } };
  if (Object.keys(scope).length > 0) before["scope"] = scope;
  before["trace_id"] = full["trace_id"]!;
  before["span_id"] = full["span_id"]!;
  if (full["parent_span_id"] !== null) before["parent_span_id"] = full["parent_span_id"]!;
  for (const key of ["trace_state", "flags"]) if (key in stored) before[key] = stored[key]!;
  before["name"] = full["name"]!;
  before["kind"] = stored["kind"]!;
  before["start_time_unix_nano"] = full["start_time_unix_nano"]!;
  before["end_time_unix_nano"] = full["end_time_unix_nano"]!;
  before["attributes"] = stored["attributes"] ?? IN_CALL_ATTRIBUTES;
  for (const key of Object.keys(stored)) if (!(key in before)) before[key] = stored[key]!;
  return before;
}

/** parseJsonLooking as it was: `trimStart`, then a depth check of the parsed value. */
function parsedBefore(value: string): JsonValue {
  const start = value.trimStart()[0];
  if (start !== "{" && start !== "[") return value;
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(value) as JsonValue;
  } catch {
    return value;
  }
  const depth = (v: JsonValue): number => (typeof v !== "object" || v === null ? 0 : 1 + Math.max(0, ...(Array.isArray(v) ? v : Object.values(v)).map(depth)));
  return depth(parsed) <= MAX_PARSED_DEPTH ? parsed : value;
}

describe("parseJsonLooking", () => {
  const spaces = [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x180e, 0x2000, 0x2005, 0x200a, 0x200b, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000, 0xfeff];
  const text = fc.oneof(
    fc.constantFrom('{"a": [1, {"b": null}]}', "[1, 2]", "{bad", "[", "x{}", "", "\"s\"", `${"[".repeat(101)}${"]".repeat(101)}`, `${"[".repeat(100)}${"]".repeat(100)}`, `[${"{}, ".repeat(120)}{}]`),
    fc.json(),
  );
  it("reads a string after any leading white space as before", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...spaces.map((c) => String.fromCharCode(c)))), text, (lead, rest) => {
        const value = lead.join("") + rest;
        expect(JSON.stringify(parseJsonLooking(value))).toBe(JSON.stringify(parsedBefore(value)));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("spanBytes", () => {
  it("counts a text's UTF-8 bytes as Buffer.byteLength does, lone surrogates included", () => {
    const empty = spanBytes(makeSpan({ name: "" }));
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: "binary" }), fc.string({ unit: "binary", minLength: 60, maxLength: 80 }), fc.array(fc.integer({ min: 0xd700, max: 0xe000 })).map((units) => String.fromCharCode(...units))), (name) => {
        expect(spanBytes(makeSpan({ name })) - empty).toBe(Buffer.byteLength(name, "utf8"));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("span ids", () => {
  /** The former rules, by regular expressions. */
  function reasonBefore(traceId: string, spanId: string, parentSpanId: string): string | null {
    const zeros = /^0+$/;
    if (!/^[0-9a-f]{32}$/.test(traceId) || zeros.test(traceId)) return "invalid trace id";
    if (!/^[0-9a-f]{16}$/.test(spanId) || zeros.test(spanId)) return "invalid span id";
    if (parentSpanId !== "" && !/^[0-9a-f]{16}$/.test(parentSpanId)) return "invalid parent span id";
    return null;
  }
  const id = (length: number) =>
    fc.oneof(
      fc.stringMatching(new RegExp(`^[0-9a-f]{${length}}$`)),
      fc.constant("0".repeat(length)),
      fc.array(fc.constantFrom("0", "1", "9", "a", "f", "A", "g", "/", ":", "`", " ", "\n"), { minLength: length - 1, maxLength: length + 1 }).map((chars) => chars.join("")),
      fc.constant(""),
    );
  it("are accepted, rejected and read as roots as by the former regular expressions", () => {
    fc.assert(
      fc.property(id(32), id(16), id(16), (traceId, spanId, parentSpanId) => {
        const result = mapSpans(batchOf([makeSpan({ traceId, spanId, parentSpanId })]), CTX);
        const reason = reasonBefore(traceId, spanId, parentSpanId);
        if (reason === null) {
          expect(result.rejected).toBe(0);
          expect(result.events[0]?.parent_id).toBe(parentSpanId === "" || /^0+$/.test(parentSpanId) ? null : parentSpanId);
        } else {
          expect(result.errors[0]).toMatch(new RegExp(`: ${reason}$`));
        }
      }),
      { numRuns: 3000 },
    );
  });
});
