/**
 * The OTLP bench's spans: agent traces of 8 spans (an agent root, 4 LLM calls, 2 tools, 1
 * failing tool), 512 per export request, every request with its own trace and span ids;
 * encoded as protobuf or OTLP/JSON. Shared by otlp.bench.ts and rowBytes.bench.ts.
 */
import { ExportTraceServiceRequest } from "../services/otlp/protobuf.js";

export const SPANS_PER_REQUEST = 512;
const T0_NS = BigInt(Date.UTC(2026, 0, 5)) * 1_000_000n;
const SPANS_PER_TRACE = 8;

type Value = string | number | boolean;

export interface BenchSpan {
  traceId: Buffer;
  spanId: Buffer;
  parentSpanId: Buffer;
  name: string;
  kind: number;
  start: bigint;
  end: bigint;
  attributes: [string, Value][];
  status: { code: number; message: string };
}

const RESOURCE: [string, Value][] = [
  ["service.name", "travel-agent"],
  ["service.version", "1.4.2"],
  ["deployment.environment", "bench"],
  ["host.name", "bench-host-1"],
  ["telemetry.sdk.name", "opentelemetry"],
  ["telemetry.sdk.language", "python"],
  ["telemetry.sdk.version", "1.30.0"],
];

function id(bytes: number, ...parts: number[]): Buffer {
  const out = Buffer.alloc(bytes, 0x5a);
  parts.forEach((p, i) => out.writeUInt32BE(p >>> 0, i * 4));
  return out;
}

/** One agent trace of 8 spans: an agent root, 4 LLM calls, 2 tools, 1 failing tool. */
function traceSpans(request: number, trace: number, t0 = T0_NS): BenchSpan[] {
  const traceId = id(16, request + 1, trace + 1, 0xbeef);
  const at = t0 + BigInt(request) * 1_000_000_000n + BigInt(trace) * 10_000_000n;
  const root = id(8, request + 1, trace * SPANS_PER_TRACE);
  const spans: BenchSpan[] = [{
    traceId, spanId: root, parentSpanId: Buffer.alloc(0), name: "invoke_agent planner", kind: 1,
    start: at, end: at + 9_000_000n,
    attributes: [
      ["gen_ai.operation.name", "invoke_agent"],
      ["gen_ai.agent.name", "planner"],
      ["gen_ai.conversation.id", `conv-${request}-${trace % 16}`],
      ["gen_ai.input.messages", JSON.stringify([{ role: "user", parts: [{ type: "text", content: `Plan a trip number ${trace} to Lyon next week, by train, with a hotel near the station.` }] }])],
      ["gen_ai.output.messages", JSON.stringify([{ role: "assistant", parts: [{ type: "text", content: "Take the TGV 6601 at 07:56 and stay at Hotel Part-Dieu." }] }])],
    ],
    status: { code: 0, message: "" },
  }];
  for (let i = 1; i < SPANS_PER_TRACE; i++) {
    const start = at + BigInt(i) * 1_000_000n;
    const base = { traceId, spanId: id(8, request + 1, trace * SPANS_PER_TRACE + i), parentSpanId: root, start, end: start + 900_000n, status: { code: 0, message: "" } };
    if (i <= 4) {
      spans.push({
        ...base, name: "chat gpt-4o-mini", kind: 3,
        attributes: [
          ["gen_ai.operation.name", "chat"],
          ["gen_ai.system", "openai"],
          ["gen_ai.request.model", "gpt-4o-mini"],
          ["gen_ai.response.model", "gpt-4o-mini-2024-07-18"],
          ["gen_ai.request.temperature", 0.2],
          ["gen_ai.request.max_tokens", 512],
          ["gen_ai.usage.input_tokens", 180 + i],
          ["gen_ai.usage.output_tokens", 40 + trace % 7],
          ["gen_ai.input.messages", JSON.stringify([{ role: "system", content: "You are a travel planner." }, { role: "user", content: `Step ${i} of trip ${trace}: find options.` }])],
          ["gen_ai.output.messages", JSON.stringify([{ role: "assistant", content: `Option ${i}: search_trains(to="Lyon")` }])],
        ],
      });
    } else if (i <= 6) {
      spans.push({
        ...base, name: "execute_tool search_trains", kind: 1,
        attributes: [
          ["gen_ai.operation.name", "execute_tool"],
          ["gen_ai.tool.name", "search_trains"],
          ["input.value", JSON.stringify({ to: "Lyon", day: "2026-01-12", passengers: 1 })],
          ["output.value", JSON.stringify({ trains: [{ id: "TGV 6601", departs: "07:56" }, { id: "TGV 6605", departs: "09:56" }] })],
        ],
      });
    } else {
      spans.push({
        ...base, name: "execute_tool book_hotel", kind: 1,
        attributes: [["gen_ai.operation.name", "execute_tool"], ["gen_ai.tool.name", "book_hotel"], ["input.value", JSON.stringify({ city: "Lyon", nights: 2 })]],
        status: { code: 2, message: "hotel API timed out" },
      });
    }
  }
  return spans;
}

/** `t0`: when the first trace starts (ns since the epoch). */
export function requestSpans(request: number, t0 = T0_NS): BenchSpan[] {
  const spans: BenchSpan[] = [];
  for (let t = 0; t < SPANS_PER_REQUEST / SPANS_PER_TRACE; t++) spans.push(...traceSpans(request, t, t0));
  return spans;
}

const pbValue = (v: Value) =>
  typeof v === "string" ? { string_value: v } : typeof v === "boolean" ? { bool_value: v } : Number.isInteger(v) ? { int_value: v } : { double_value: v };
const pbAttrs = (attrs: [string, Value][]) => attrs.map(([key, value]) => ({ key, value: pbValue(value) }));

export function protobufRequest(spans: BenchSpan[]): Buffer {
  const message = ExportTraceServiceRequest.fromObject({
    resource_spans: [{
      resource: { attributes: pbAttrs(RESOURCE) },
      scope_spans: [{
        scope: { name: "opentelemetry.instrumentation.openai_agents", version: "0.1.0" },
        spans: spans.map((s) => ({
          trace_id: s.traceId, span_id: s.spanId, parent_span_id: s.parentSpanId, name: s.name, kind: s.kind,
          start_time_unix_nano: s.start.toString(), end_time_unix_nano: s.end.toString(),
          attributes: pbAttrs(s.attributes), status: s.status,
        })),
      }],
    }],
  });
  const bytes = ExportTraceServiceRequest.encode(message).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

const jsonValue = (v: Value) =>
  typeof v === "string" ? { stringValue: v } : typeof v === "boolean" ? { boolValue: v } : Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
const jsonAttrs = (attrs: [string, Value][]) => attrs.map(([key, value]) => ({ key, value: jsonValue(value) }));

export function jsonRequest(spans: BenchSpan[]): Buffer {
  return Buffer.from(JSON.stringify({
    resourceSpans: [{
      resource: { attributes: jsonAttrs(RESOURCE) },
      scopeSpans: [{
        scope: { name: "opentelemetry.instrumentation.openai_agents", version: "0.1.0" },
        spans: spans.map((s) => ({
          traceId: s.traceId.toString("hex"), spanId: s.spanId.toString("hex"), parentSpanId: s.parentSpanId.toString("hex"),
          name: s.name, kind: s.kind, startTimeUnixNano: s.start.toString(), endTimeUnixNano: s.end.toString(),
          attributes: jsonAttrs(s.attributes), status: s.status,
        })),
      }],
    }],
  }));
}
