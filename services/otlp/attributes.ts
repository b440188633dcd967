/**
 * Which span attributes feed which call field (tracing-api.md, "OpenTelemetry export"),
 * and the functions that read them. Every list is in priority order: the first key that
 * is present (non-null) wins. A key also matches its flattened family, e.g. `gen_ai.prompt`
 * matches `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content` as `{"0": {role, content}}`.
 */
import type { OtlpAttributes } from "./batch.js";
import { dottedKey, lookup, setOwn, type DottedKey } from "./nest.js";
import { isJsonObject } from "../json.js";
import { INFERENCE_OPERATIONS, OPERATION_ATTRIBUTE } from "../genAiOperations.js";
import type { JsonObject, JsonValue } from "../json.js";

export const INPUT_KEYS = [
  "ai.prompt",
  // Vercel AI SDK up to 6: a tool call's arguments (JSON text).
  "ai.toolCall.args",
  "gen_ai.prompt",
  "input.value",
  "mlflow.spanInputs",
  "gen_ai.input.messages",
  "langfuse.observation.input",
  "pydantic_ai.all_messages",
  "traceloop.entity.input",
  "gcp.vertex.agent.tool_call_args",
  "gcp.vertex.agent.llm_request",
  // Mastra keeps a span's input under its span type (`mastra.model_step.input`, `mastra.agent_run.input`).
  "mastra.*.input",
  // Set on the span that carries the whole trace's input (Langfuse's `setTraceIO`); its own input comes first.
  "langfuse.trace.input",
  "input",
  "inputs",
] as const;

export const OUTPUT_KEYS = [
  "ai.response",
  "ai.toolCall.result",
  "gen_ai.completion",
  "output.value",
  "gen_ai.output.messages",
  "langfuse.observation.output",
  "mlflow.spanOutputs",
  "final_result",
  "gen_ai.content.completion",
  "traceloop.entity.output",
  "gcp.vertex.agent.tool_response",
  "gcp.vertex.agent.llm_response",
  "mastra.*.output",
  "langfuse.trace.output",
  "output",
  "outputs",
] as const;

/** `summary.usage[<model>]` field ← span attribute keys. */
export const USAGE_KEYS = {
  input_tokens: ["gen_ai.usage.input_tokens"],
  prompt_tokens: ["gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "ai.usage.promptTokens"],
  completion_tokens: ["gen_ai.usage.completion_tokens", "llm.token_count.completion", "ai.usage.completionTokens"],
  output_tokens: ["gen_ai.usage.output_tokens"],
  total_tokens: ["llm.usage.total_tokens", "llm.token_count.total"],
} as const satisfies Record<string, readonly string[]>;

/**
 * Langfuse's usage: one JSON object (`{"input": 10, "output": 5, "total": 15}`, or the
 * provider's own keys). Its figures fill the usage fields the keys above did not; its
 * names are renamed as below, every other numeric key is kept as it is.
 */
export const LANGFUSE_USAGE_KEY = "langfuse.observation.usage_details";
export const LANGFUSE_USAGE_NAMES: Readonly<Record<string, string>> = { input: "input_tokens", output: "output_tokens", total: "total_tokens" };

/** Call `attributes` fields holding one text value each ← span attribute keys. */
export const FAMILY_KEYS = {
  model: ["gen_ai.response.model", "gen_ai.request.model", "llm.model_name", "ai.model.id", "langfuse.observation.model.name"],
  provider: ["llm.provider", "ai.model.provider"],
  system: ["gen_ai.system", "llm.system"],
  kind: ["weave.span.kind", "traceloop.span.kind", "openinference.span.kind", "langfuse.observation.type"],
  [OPERATION_ATTRIBUTE]: ["gen_ai.operation.name", "ai.operationId"],
  agent: ["gen_ai.agent.name"],
  trace_name: ["langfuse.trace.name"],
} as const satisfies Record<string, readonly string[]>;

/**
 * Call `attributes` fields holding JSON (objects or lists, also when sent as JSON text) ←
 * span attribute keys. `metadata` merges every key present, the later ones' entries
 * winning: a trace's metadata, then the span's own.
 */
export const JSON_FAMILY_KEYS = {
  tags: ["langfuse.trace.tags"],
  metadata: ["langfuse.trace.metadata", "langfuse.observation.metadata"],
  cost_details: ["langfuse.observation.cost_details"],
} as const satisfies Record<string, readonly string[]>;

/** `model_parameters` = the `gen_ai.request.*` family (but the model) over the parsed `llm.invocation_parameters`. */
export const REQUEST_PARAMETERS_KEY = "gen_ai.request";
export const INVOCATION_PARAMETERS_KEY = "llm.invocation_parameters";
export const LANGFUSE_PARAMETERS_KEY = "langfuse.observation.model.parameters";

// Last: the session a Vercel AI SDK user passes as telemetry metadata (the AI SDK has no session of its own).
export const THREAD_ID_KEYS = ["wandb.thread_id", "gcp.vertex.agent.session_id", "session.id", "gen_ai.conversation.id", "ai.telemetry.metadata.sessionId"] as const;
export const DISPLAY_NAME_KEY = "wandb.display_name";
export const IS_TURN_KEY = "wandb.is_turn";
export const RUN_ID_KEY = "wandb.run_id";
export const RUN_STEP_KEY = "wandb.run_step";

export const UNKNOWN_MODEL = "unknown";

/** Parsed JSON-looking strings nested deeper than this stay strings (deeper JSON cannot be written back safely). */
export const MAX_PARSED_DEPTH = 100;

/* The tables with their keys split once. */
const INPUT_PATHS = INPUT_KEYS.map(dottedKey);
const OUTPUT_PATHS = OUTPUT_KEYS.map(dottedKey);
const USAGE_PATHS = Object.entries(USAGE_KEYS).map(([field, keys]) => [field, keys.map(dottedKey)] as const);
const FAMILY_PATHS = Object.entries(FAMILY_KEYS).map(([family, keys]) => [family, keys.map(dottedKey)] as const);
const MODEL_PATHS = FAMILY_KEYS.model.map(dottedKey);
const OPERATION_PATHS = FAMILY_KEYS[OPERATION_ATTRIBUTE].map(dottedKey);
const INFERENCE_OPERATION_SET: ReadonlySet<string> = new Set(INFERENCE_OPERATIONS);
const THREAD_ID_PATHS = THREAD_ID_KEYS.map(dottedKey);
const REQUEST_PARAMETERS = dottedKey(REQUEST_PARAMETERS_KEY);
const INVOCATION_PARAMETERS = dottedKey(INVOCATION_PARAMETERS_KEY);
const LANGFUSE_PARAMETERS = dottedKey(LANGFUSE_PARAMETERS_KEY);
const LANGFUSE_USAGE = dottedKey(LANGFUSE_USAGE_KEY);
const JSON_FAMILY_PATHS = Object.entries(JSON_FAMILY_KEYS).map(([family, keys]) => [family, keys.map(dottedKey)] as const);
const DISPLAY_NAME = dottedKey(DISPLAY_NAME_KEY);
const IS_TURN = dottedKey(IS_TURN_KEY);
const RUN_ID = dottedKey(RUN_ID_KEY);
const RUN_STEP = dottedKey(RUN_STEP_KEY);

/** One span's attributes, flat as received and nested by their dots. */
export interface SpanAttributes {
  readonly flat: OtlpAttributes;
  readonly nested: JsonObject;
}

function firstPresent(attrs: SpanAttributes, keys: readonly DottedKey[]): JsonValue | undefined {
  for (const key of keys) {
    const value = lookup(attrs.flat, attrs.nested, key);
    if (value !== undefined) return value;
  }
  return undefined;
}

/** Strings, numbers and booleans as text; anything else is no text. */
export function asText(value: JsonValue | undefined): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return undefined;
}

/** Numbers, and strings holding a decimal number. */
export function asNumber(value: JsonValue | undefined): number | undefined {
  if (typeof value === "number") return value;
  if (typeof value === "string" && /^\s*-?\d+(\.\d+)?\s*$/.test(value)) return Number(value);
  return undefined;
}

/** A string that starts with `{` or `[` and parses as JSON (at most `MAX_PARSED_DEPTH` deep) becomes that JSON. */
export function parseJsonLooking(value: JsonValue): JsonValue {
  if (typeof value !== "string" || !opensJson(value)) return value;
  let parsed: JsonValue;
  try {
    parsed = JSON.parse(value) as JsonValue;
  } catch {
    return value;
  }
  return openingsAtMost(value, MAX_PARSED_DEPTH) || depthAtMost(parsed, MAX_PARSED_DEPTH) ? parsed : value;
}

/** Whether the first character after white space (as `trimStart` removes it) is `{` or `[`. */
function opensJson(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b) return true;
    if (c > 0x20 && c < 0x7f) return false;
    if (!isTrimmedSpace(c)) return false;
  }
  return false;
}

/** The white space and line terminators `String.prototype.trim` removes (ECMAScript WhiteSpace, LineTerminator). */
function isTrimmedSpace(c: number): boolean {
  return (c >= 0x09 && c <= 0x0d) || c === 0x20 || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/** Cheap bound first: JSON text with at most `limit` `{`/`[` characters cannot nest deeper. */
function openingsAtMost(text: string, limit: number): boolean {
  if (text.length <= limit) return true;
  let openings = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x7b || c === 0x5b) && ++openings > limit) return false;
  }
  return true;
}

function depthAtMost(value: JsonValue, limit: number): boolean {
  if (typeof value !== "object" || value === null) return true;
  if (limit === 0) return false;
  const children = Array.isArray(value) ? value : Object.values(value);
  return children.every((child) => depthAtMost(child, limit - 1));
}

/** Call inputs are always an object: anything else is wrapped as `{value: <it>}`. */
export function callInputs(attrs: SpanAttributes): JsonObject {
  const found = firstPresent(attrs, INPUT_PATHS);
  return found === undefined ? {} : inputsOf(found);
}

function inputsOf(found: JsonValue): JsonObject {
  const value = parseJsonLooking(found);
  return isJsonObject(value) ? value : { value };
}

/**
 * Mastra's model call (`chat`, its `model_inference` span) carries no prompt: the prompt is on
 * the `model_step` span just above it, as this attribute. Mastra's exporter sends a trace's
 * spans together once its root ends, so the parent is in the same export as the call.
 */
export const PARENT_INPUT_KEY = "mastra.model_step.input";

/** The prompt a span hands down to a model call below it that has none (PARENT_INPUT_KEY), if any. */
export function inputForChildren(attributes: OtlpAttributes): JsonValue | undefined {
  return Object.hasOwn(attributes, PARENT_INPUT_KEY) ? attributes[PARENT_INPUT_KEY] ?? undefined : undefined;
}

/** A model call's inputs when its own attributes have none: what its parent handed down (`inputForChildren`). */
export function inheritedInputs(attrs: SpanAttributes, parentInput: JsonValue | undefined): JsonObject | undefined {
  if (parentInput === undefined) return undefined;
  const operation = asText(firstPresent(attrs, OPERATION_PATHS));
  return operation !== undefined && INFERENCE_OPERATION_SET.has(operation) ? inputsOf(parentInput) : undefined;
}

export function callOutput(attrs: SpanAttributes): JsonValue {
  const found = firstPresent(attrs, OUTPUT_PATHS);
  return found === undefined ? null : parseJsonLooking(found);
}

export function modelName(attrs: SpanAttributes): string | undefined {
  return asText(firstPresent(attrs, MODEL_PATHS));
}

/** `{<model or "unknown">: {<usage field>: n}}`, or null when the span reports no usage. */
export function callUsage(attrs: SpanAttributes): JsonObject | null {
  const usage: JsonObject = {};
  let reported = false;
  for (const [field, keys] of USAGE_PATHS) {
    for (const key of keys) {
      const n = asNumber(lookup(attrs.flat, attrs.nested, key));
      if (n !== undefined) {
        usage[field] = n;
        reported = true;
        break;
      }
    }
  }
  if (addLangfuseUsage(attrs, usage)) reported = true;
  if (!reported) return null;
  const usageByModel: JsonObject = {};
  setOwn(usageByModel, modelName(attrs) ?? UNKNOWN_MODEL, usage);
  return usageByModel;
}

/** Adds Langfuse's usage figures to `usage` (a field already set stays); whether it added any. */
function addLangfuseUsage(attrs: SpanAttributes, usage: JsonObject): boolean {
  const details = lookup(attrs.flat, attrs.nested, LANGFUSE_USAGE);
  if (details === undefined) return false;
  const parsed = parseJsonLooking(details);
  if (!isJsonObject(parsed)) return false;
  let added = false;
  for (const key of Object.keys(parsed)) {
    const n = asNumber(parsed[key] ?? null);
    const field = Object.hasOwn(LANGFUSE_USAGE_NAMES, key) ? LANGFUSE_USAGE_NAMES[key]! : key;
    if (n === undefined || Object.hasOwn(usage, field)) continue;
    setOwn(usage, field, n);
    added = true;
  }
  return added;
}

/** The mapped attribute families; absent ones are left out. */
export function mappedFamilies(attrs: SpanAttributes): JsonObject {
  const families: JsonObject = {};
  for (const [family, keys] of FAMILY_PATHS) {
    const value = asText(firstPresent(attrs, keys));
    if (value !== undefined) families[family] = value;
  }
  const parameters = modelParameters(attrs);
  if (hasKeys(parameters)) families["model_parameters"] = parameters;
  for (const [family, keys] of JSON_FAMILY_PATHS) {
    const value = jsonFamily(attrs, keys);
    if (value !== undefined) families[family] = value;
  }
  return families;
}

/** Objects found under the keys are merged (later keys' entries win); any other value is taken from the first key that has one. */
function jsonFamily(attrs: SpanAttributes, keys: readonly DottedKey[]): JsonValue | undefined {
  let merged: JsonObject | undefined;
  let other: JsonValue | undefined;
  for (const key of keys) {
    const found = lookup(attrs.flat, attrs.nested, key);
    if (found === undefined) continue;
    const value = parseJsonLooking(found);
    if (isJsonObject(value)) copyInto((merged ??= {}), value);
    else other ??= value;
  }
  return merged ?? other;
}

function modelParameters(attrs: SpanAttributes): JsonObject {
  const parameters: JsonObject = {};
  const invocation = lookup(attrs.flat, attrs.nested, INVOCATION_PARAMETERS);
  if (invocation !== undefined) {
    const parsed = parseJsonLooking(invocation);
    if (isJsonObject(parsed)) copyInto(parameters, parsed);
    else parameters["invocation_parameters"] = parsed;
  }
  const langfuse = lookup(attrs.flat, attrs.nested, LANGFUSE_PARAMETERS);
  if (langfuse !== undefined) {
    const parsed = parseJsonLooking(langfuse);
    if (isJsonObject(parsed)) copyInto(parameters, parsed);
  }
  const request = lookup(attrs.flat, attrs.nested, REQUEST_PARAMETERS);
  if (isJsonObject(request)) copyInto(parameters, request, "model");
  return parameters;
}

function copyInto(target: JsonObject, source: JsonObject, except?: string): void {
  for (const key of Object.keys(source)) if (key !== except) setOwn(target, key, source[key] ?? null);
}

export function hasKeys(object: JsonObject): boolean {
  for (const _key in object) return true;
  return false;
}

export function threadId(attrs: SpanAttributes): string | null {
  return asText(firstPresent(attrs, THREAD_ID_PATHS)) ?? null;
}

export function displayName(attrs: SpanAttributes): string | null {
  return asText(lookup(attrs.flat, attrs.nested, DISPLAY_NAME)) ?? null;
}

export function isTurn(attrs: SpanAttributes): boolean {
  const value = lookup(attrs.flat, attrs.nested, IS_TURN);
  return value === true || value === "true";
}

export function runId(attrs: SpanAttributes): string | null {
  return asText(lookup(attrs.flat, attrs.nested, RUN_ID)) ?? null;
}

export function runStep(attrs: SpanAttributes): number | null {
  const n = asNumber(lookup(attrs.flat, attrs.nested, RUN_STEP));
  return n !== undefined && Number.isSafeInteger(n) ? n : null;
}
