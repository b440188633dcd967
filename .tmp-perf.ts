import { ExportTraceServiceRequest } from "./services/ingest/otlp/protobuf.js";
import { decodeProtobufRequest } from "./services/ingest/otlp/decode.js";
import { mapSpans } from "./services/ingest/otlp/mapSpan.js";
const kv = (key: string, v: Record<string, unknown>) => ({ key, value: v });
const spans = Array.from({ length: 10000 }, (_, i) => ({
  trace_id: Buffer.alloc(16, 1), span_id: Buffer.from((i + 1).toString(16).padStart(16, "0"), "hex"), name: "chat", kind: 3,
  start_time_unix_nano: "1700000000123456789", end_time_unix_nano: "1700000001123456789",
  attributes: [kv("gen_ai.request.model", { string_value: "gpt-4o" }), kv("gen_ai.usage.input_tokens", { int_value: 10 }), kv("gen_ai.usage.output_tokens", { int_value: 5 }),
    kv("input.value", { string_value: JSON.stringify({ messages: [{ role: "user", content: "x".repeat(300) }] }) }), kv("output.value", { string_value: "y".repeat(300) }),
    ...Array.from({ length: 15 }, (_, j) => kv(`app.attr.${j}`, { string_value: "value" + j }))],
}));
const body = Buffer.from(ExportTraceServiceRequest.encode(ExportTraceServiceRequest.fromObject({ resource_spans: [{ resource: { attributes: [kv("service.name", { string_value: "s" })] }, scope_spans: [{ spans }] }] })).finish());
let t = performance.now();
for (let r = 0; r < 5; r++) { const raw = ExportTraceServiceRequest.decode(body); }
console.log("raw decode", ((performance.now() - t) / 5).toFixed(0));
t = performance.now();
for (let r = 0; r < 5; r++) { const b = decodeProtobufRequest(body); }
console.log("decode", ((performance.now() - t) / 5).toFixed(0));
const b = decodeProtobufRequest(body);
t = performance.now();
for (let r = 0; r < 5; r++) mapSpans(b, { project_id: "e/p", wb_user_id: "u", maxSpanBytes: 1 << 20 });
console.log("map", ((performance.now() - t) / 5).toFixed(0));
