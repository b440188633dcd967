/**
 * A varied, deterministic corpus of OTLP protobuf export bodies for the regression tests of
 * decoding and mapping: the bench's agent spans plus seeded random requests that exercise
 * what the mapping reads (dotted keys that collide, JSON-looking strings, every value type,
 * the mapped attribute families, events, links, invalid ids, unknown enums).
 */
import { ExportTraceServiceRequest } from "../../services/otlp/protobuf.js";
import { FAMILY_KEYS, INPUT_KEYS, OUTPUT_KEYS, THREAD_ID_KEYS, USAGE_KEYS } from "../../services/otlp/attributes.js";
import { protobufRequest, requestSpans } from "../../bench/otlpSpans.js";
import { seededRandom } from "../support/seededRandom.js";

type Random = () => number;
type PbObject = Record<string, unknown>;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const int = (random: Random, below: number): number => Math.floor(random() * below);

/**
 * Keys added to the tables after mapRegression's digest was taken: left out, so that the
 * random requests stay the ones the digest was taken on (they pick keys by position).
 * Their mapping has tests of its own (mapLangfuseMastra.test.ts).
 */
const ADDED_AFTER_DIGEST = new Set<string>([
  "langfuse.observation.input", "langfuse.observation.output", "mastra.*.input", "mastra.*.output", "langfuse.trace.input", "langfuse.trace.output",
  "langfuse.observation.model.name", "langfuse.observation.type", "langfuse.trace.name", "ai.operationId",
  "ai.toolCall.args", "ai.toolCall.result", "ai.telemetry.metadata.sessionId",
]);
const MAPPED_KEYS = [
  ...INPUT_KEYS, ...OUTPUT_KEYS, ...THREAD_ID_KEYS,
  ...Object.values(USAGE_KEYS).flat(), ...Object.values(FAMILY_KEYS).flat(),
  "gen_ai.request.temperature", "gen_ai.request.model", "gen_ai.request", "llm.invocation_parameters",
  "wandb.display_name", "wandb.is_turn", "wandb.run_id", "wandb.run_step",
].filter((key) => !ADDED_AFTER_DIGEST.has(key));
const ODD_KEYS = ["a", "a.b", "a.b.c", "a..b", ".a", "a.", ".", "", "__proto__", "a.__proto__", "constructor", "x.toString", "é.ü", "gen_ai.prompt.0.role", "gen_ai.prompt.0.content", "gen_ai.prompt.1.content", "gen_ai.completion.0.content", "llm.input_messages.0.message.content", "z".repeat(3) + ".q".repeat(40)];
const JSON_LOOKING = [
  '{"a": 1, "b": [true, null]}', ' [1, 2, {"c": "d"}]', "\n{\"k\": \"v\"}", "{not json", "[", "{}", "[]", '{"__proto__": {"x": 1}}',
  '"quoted"', "123", "true", "null", `${"[".repeat(101)}${"]".repeat(101)}`, `${"[".repeat(99)}${"]".repeat(99)}`, '{"model": "m", "temperature": 0.5}',
];
const TEXTS = ["", "text", "42", " -3.5 ", "1e3", "true", "false", "héllo ✓", "\u0000nul", "line\nbreak", "😀 emoji", "a".repeat(300)];

function key(random: Random): string {
  const r = random();
  if (r < 0.45) return pick(random, MAPPED_KEYS);
  if (r < 0.7) return pick(random, ODD_KEYS);
  return `${pick(random, ["app", "gen_ai", "llm", "http"])}.${pick(random, ["x", "y", "request", "usage"])}${random() < 0.5 ? `.${int(random, 3)}` : ""}`;
}

function anyValue(random: Random, depth: number): PbObject {
  const r = random();
  if (r < 0.3) return { string_value: pick(random, TEXTS) };
  if (r < 0.5) return { string_value: pick(random, JSON_LOOKING) };
  if (r < 0.58) return { bool_value: random() < 0.5 };
  if (r < 0.68) return { int_value: pick(random, [0, 1, -7, 512, "9007199254740993", "-9223372036854775808", "18446744073709551615", 2 ** 40]) };
  if (r < 0.76) return { double_value: pick(random, [0.25, -1.5, 1e300, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0]) };
  if (r < 0.8) return { bytes_value: Buffer.from(Array.from({ length: int(random, 6) }, () => int(random, 256))) };
  if (r < 0.84) return {};
  if (depth > 3) return { string_value: "leaf" };
  if (r < 0.92) return { array_value: { values: Array.from({ length: int(random, 4) }, () => anyValue(random, depth + 1)) } };
  return { kvlist_value: { values: attributes(random, depth + 1, 4) } };
}

function attributes(random: Random, depth: number, most: number): PbObject[] {
  return Array.from({ length: int(random, most + 1) }, () => ({ key: key(random), value: anyValue(random, depth) }));
}

/** Attributes without key-value lists, so that otel_dump leaves them out (see otelDump.ts). */
function flatAttributes(random: Random, most: number): PbObject[] {
  return attributes(random, 0, most).filter((kv) => !("kvlist_value" in (kv["value"] as PbObject)));
}

function id(random: Random, bytes: number): Buffer {
  const r = random();
  if (r < 0.03) return Buffer.alloc(bytes);
  if (r < 0.06) return Buffer.alloc(bytes - 1, 7);
  return Buffer.from(Array.from({ length: bytes }, () => int(random, 256)));
}

function time(random: Random): string {
  return (1_700_000_000_000_000_000n + BigInt(int(random, 1_000_000_000))).toString();
}

function span(random: Random): PbObject {
  const start = time(random);
  const r = random();
  const end = r < 0.03 ? "1" : r < 0.05 ? "18446744073709551615" : (BigInt(start) + BigInt(int(random, 5_000_000_000))).toString();
  const parent = random();
  return {
    trace_id: id(random, 16),
    span_id: id(random, 8),
    parent_span_id: parent < 0.4 ? Buffer.alloc(0) : parent < 0.45 ? Buffer.alloc(8) : id(random, 8),
    trace_state: random() < 0.2 ? "vendor=1" : "",
    flags: random() < 0.2 ? 0x301 : 0,
    name: pick(random, ["chat gpt-4o", "execute_tool", "", "é ✓"]),
    kind: int(random, 8),
    start_time_unix_nano: start,
    end_time_unix_nano: end,
    attributes: random() < 0.6 ? flatAttributes(random, 12) : attributes(random, 0, 12),
    dropped_attributes_count: random() < 0.1 ? 3 : 0,
    events: random() < 0.3 ? Array.from({ length: 1 + int(random, 2) }, () => ({ time_unix_nano: time(random), name: "exception", attributes: attributes(random, 1, 3), dropped_attributes_count: int(random, 2) })) : [],
    dropped_events_count: random() < 0.1 ? 1 : 0,
    links: random() < 0.2 ? [{ trace_id: id(random, 16), span_id: id(random, 8), trace_state: "t=1", attributes: attributes(random, 1, 2), dropped_attributes_count: 1, flags: 1 }] : [],
    dropped_links_count: random() < 0.1 ? 2 : 0,
    status: random() < 0.5 ? null : { code: int(random, 4), message: pick(random, ["", "boom", "hotel API timed out"]) },
  };
}

function randomRequest(random: Random): PbObject {
  return {
    resource_spans: Array.from({ length: 1 + int(random, 2) }, () => ({
      resource: random() < 0.1 ? null : { attributes: random() < 0.7 ? flatAttributes(random, 6) : attributes(random, 0, 6), dropped_attributes_count: int(random, 2) },
      schema_url: random() < 0.3 ? "https://opentelemetry.io/schemas/1.26.0" : "",
      scope_spans: Array.from({ length: 1 + int(random, 2) }, () => ({
        scope: random() < 0.2 ? null : { name: pick(random, ["", "my.lib"]), version: pick(random, ["", "1.0"]), attributes: attributes(random, 1, 2), dropped_attributes_count: int(random, 2) },
        schema_url: random() < 0.2 ? "s" : "",
        spans: Array.from({ length: 1 + int(random, 6) }, () => span(random)),
      })),
    })),
  };
}

export function encodeRequest(request: PbObject): Buffer {
  return Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject(request)).finish());
}

/** `requests` seeded random bodies, then two of the bench's 512-span bodies. */
export function corpusBodies(requests: number, seed = 12): Buffer[] {
  const random = seededRandom(seed);
  const bodies = Array.from({ length: requests }, () => encodeRequest(randomRequest(random)));
  bodies.push(protobufRequest(requestSpans(0)), protobufRequest(requestSpans(7)));
  return bodies;
}
