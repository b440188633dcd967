/**
 * A span's OTLP log records at read time (they may arrive before or after the span, so they
 * are joined here, not when either is stored). GenAI events are the event form of a model
 * call's prompt and answer (OpenTelemetry GenAI conventions): `gen_ai.system.message`,
 * `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message` (body: the message
 * without its role) and `gen_ai.choice` (body: `{index, finish_reason, message}`), or one
 * `gen_ai.client.inference.operation.details` event holding `gen_ai.input.messages` /
 * `gen_ai.output.messages` attributes. A call of a span whose own attributes gave no inputs
 * (`{}`) or no output (null) shows them as `{messages: [...]}` and `{choices: [...]}`.
 */
import type { OtlpLogRecord } from "../queue/events.js";
import type { OtelLogsRepository } from "../store/otelLogs/otelLogsRepository.js";
import { isJsonObject, type JsonObject, type JsonValue } from "../json.js";

const MESSAGE_EVENTS: Readonly<Record<string, string>> = {
  "gen_ai.system.message": "system",
  "gen_ai.user.message": "user",
  "gen_ai.assistant.message": "assistant",
  "gen_ai.tool.message": "tool",
};
const CHOICE_EVENT = "gen_ai.choice";
const INPUT_MESSAGES = "gen_ai.input.messages";
const OUTPUT_MESSAGES = "gen_ai.output.messages";

/** What the span's GenAI events say its inputs and output were; absent parts are undefined. */
export function genAiEventParts(records: readonly OtlpLogRecord[]): { inputs?: JsonObject; output?: JsonValue } {
  const messages: JsonValue[] = [];
  const choices: JsonValue[] = [];
  let inputMessages: JsonValue | undefined;
  let outputMessages: JsonValue | undefined;
  for (const record of records) {
    const role = MESSAGE_EVENTS[record.event_name];
    if (role !== undefined) messages.push(isJsonObject(record.body) ? { role, ...record.body } : { role, content: record.body });
    else if (record.event_name === CHOICE_EVENT) choices.push(record.body);
    inputMessages ??= parsed(record.attributes[INPUT_MESSAGES]);
    outputMessages ??= parsed(record.attributes[OUTPUT_MESSAGES]);
  }
  const inputs = messages.length > 0 ? { messages } : inputMessages !== undefined ? { messages: inputMessages } : undefined;
  const output = choices.length > 0 ? { choices } : outputMessages;
  return { ...(inputs ? { inputs } : {}), ...(output !== undefined ? { output } : {}) };
}

function parsed(value: JsonValue | undefined): JsonValue | undefined {
  if (typeof value !== "string") return value ?? undefined;
  try {
    return JSON.parse(value) as JsonValue;
  } catch {
    return value;
  }
}

type ApiCall = Record<string, unknown>;

const isSpan = (call: ApiCall) => isJsonObject(call["attributes"] as JsonValue) && isJsonObject((call["attributes"] as JsonObject)["otel"] ?? null);
const lacksInputs = (call: ApiCall) => isJsonObject(call["inputs"] as JsonValue) && Object.keys(call["inputs"] as JsonObject).length === 0;
const lacksOutput = (call: ApiCall) => call["output"] === null;

/** Fills, in place, the inputs and output of the chunk's span calls that have none from their GenAI events. */
export async function fillFromGenAiEvents(logs: OtelLogsRepository, projectId: string, calls: ApiCall[]): Promise<void> {
  const wanting = calls.filter((c) => isSpan(c) && typeof c["id"] === "string" && (lacksInputs(c) || lacksOutput(c)));
  if (wanting.length === 0) return;
  // The calls were read within the project's retention: all their records.
  const records = await logs.forSpans(projectId, wanting.map((c) => c["id"] as string), true, null);
  for (const call of wanting) {
    const found = records.get(call["id"] as string);
    if (!found) continue;
    const parts = genAiEventParts(found);
    if (parts.inputs && lacksInputs(call)) call["inputs"] = parts.inputs;
    if (parts.output !== undefined && lacksOutput(call)) call["output"] = parts.output;
  }
}
