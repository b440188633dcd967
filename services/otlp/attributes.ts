/**
 * Which span attributes feed which call field (tracing-api.md, "OpenTelemetry export"),
 * and how the call's fields are made of them. Every list is in priority order: the first key
 * that is present (non-null) wins. A key also matches its flattened family, e.g. `gen_ai.prompt`
 * matches `gen_ai.prompt.0.role`, `gen_ai.prompt.0.content` as `{"0": {role, content}}`.
 * The lists make one table (`SPAN_KEYS`) that a span's attributes are read against in one
 * pass (keyTable.ts); `spanFields` then makes each field of the keys found.
 */
import type { OtlpAttributes } from "./batch.js";
import { setOwn } from "./nest.js";
import { FoundKeys, KeyTable, lowestRank } from "./keyTable.js";
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

/**
 * The one table: every field the attributes fill ← its keys, in the priority order of the
 * lists above (where two conventions set one field, the earlier key wins, whatever the order
 * the attributes come in). How each field takes its keys' values is in `spanFields`.
 */
export const SPAN_KEYS = new KeyTable({
  inputs: INPUT_KEYS,
  output: OUTPUT_KEYS,
  "usage.input_tokens": USAGE_KEYS.input_tokens,
  "usage.prompt_tokens": USAGE_KEYS.prompt_tokens,
  "usage.completion_tokens": USAGE_KEYS.completion_tokens,
  "usage.output_tokens": USAGE_KEYS.output_tokens,
  "usage.total_tokens": USAGE_KEYS.total_tokens,
  "usage.langfuse": [LANGFUSE_USAGE_KEY],
  ...FAMILY_KEYS,
  "model_parameters.invocation": [INVOCATION_PARAMETERS_KEY],
  "model_parameters.langfuse": [LANGFUSE_PARAMETERS_KEY],
  "model_parameters.request": [REQUEST_PARAMETERS_KEY],
  ...JSON_FAMILY_KEYS,
  thread_id: THREAD_ID_KEYS,
  display_name: [DISPLAY_NAME_KEY],
  is_turn: [IS_TURN_KEY],
  run_id: [RUN_ID_KEY],
  run_step: [RUN_STEP_KEY],
});

const FIELD = SPAN_KEYS.field;
const USAGE_FIELDS = Object.keys(USAGE_KEYS).map((name) => [name, FIELD[`usage.${name as keyof typeof USAGE_KEYS}`]] as const);
const FAMILY_FIELDS = Object.keys(FAMILY_KEYS).map((name) => [name, FIELD[name as keyof typeof FAMILY_KEYS]] as const);
const JSON_FAMILY_FIELDS = Object.keys(JSON_FAMILY_KEYS).map((name) => [name, FIELD[name as keyof typeof JSON_FAMILY_KEYS]] as const);
const INFERENCE_OPERATION_SET: ReadonlySet<string> = new Set(INFERENCE_OPERATIONS);

/** The span's keys of the table: one for the thread, read again for every span (`spanFields`). */
const found = new FoundKeys(SPAN_KEYS);

/** What a span's attributes give its call. */
export interface SpanFields {
  /** Always an object: anything else is wrapped as `{value: <it>}`; `{}` when none. */
  readonly inputs: JsonObject;
  readonly output: JsonValue;
  /** `{<model or "unknown">: {<usage field>: n}}`, or null when the span reports no usage. */
  readonly usage: JsonObject | null;
  /** The mapped families of the call's `attributes` (absent ones left out); the caller adds `otel`. */
  readonly families: JsonObject;
  /** The family `operation` (also in `families`). */
  readonly operation: string | undefined;
  readonly threadId: string | null;
  readonly displayName: string | null;
  readonly isTurn: boolean;
  readonly runId: string | null;
  readonly runStep: number | null;
}

/** A span's call fields from its attributes: `flat` as received, `nested` = `nestDottedKeys(flat)`. */
export function spanFields(flat: OtlpAttributes, nested: JsonObject): SpanFields {
  found.read(flat, nested);
  const families = mappedFamilies();
  const model = families["model"];
  const operation = families[OPERATION_ATTRIBUTE];
  const isTurn = found.first(FIELD.is_turn);
  const runStep = asNumber(found.first(FIELD.run_step));
  return {
    inputs: callInputs(),
    output: callOutput(),
    usage: callUsage(typeof model === "string" ? model : UNKNOWN_MODEL),
    families,
    operation: typeof operation === "string" ? operation : undefined,
    threadId: asText(found.first(FIELD.thread_id)) ?? null,
    displayName: asText(found.first(FIELD.display_name)) ?? null,
    isTurn: isTurn === true || isTurn === "true",
    runId: asText(found.first(FIELD.run_id)) ?? null,
    runStep: runStep !== undefined && Number.isSafeInteger(runStep) ? runStep : null,
  };
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


function callInputs(): JsonObject {
  const value = found.first(FIELD.inputs);
  return value === undefined ? {} : inputsOf(value);
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

/** A model call's inputs when its own attributes have none: what its parent handed down (`inputForChildren`); `operation`: SpanFields'. */
export function inheritedInputs(operation: string | undefined, parentInput: JsonValue | undefined): JsonObject | undefined {
  if (parentInput === undefined) return undefined;
  return operation !== undefined && INFERENCE_OPERATION_SET.has(operation) ? inputsOf(parentInput) : undefined;
}

function callOutput(): JsonValue {
  const value = found.first(FIELD.output);
  return value === undefined ? null : parseJsonLooking(value);
}

/** Each usage field from its first key holding a number, then Langfuse's figures; under `model`. */
function callUsage(model: string): JsonObject | null {
  let usage: JsonObject | null = null;
  for (const [name, field] of USAGE_FIELDS) {
    const n = firstNumber(field);
    if (n !== undefined) (usage ??= {})[name] = n;
  }
  usage = withLangfuseUsage(usage);
  if (usage === null) return null;
  const usageByModel: JsonObject = {};
  setOwn(usageByModel, model, usage);
  return usageByModel;
}

/** The number of `field`'s first key holding one (a later key counts when an earlier one holds no number). */
function firstNumber(field: number): number | undefined {
  for (let mask = found.mask(field); mask !== 0; mask &= mask - 1) {
    const n = asNumber(found.value(field, lowestRank(mask)));
    if (n !== undefined) return n;
  }
  return undefined;
}

/** `usage` with Langfuse's usage figures added (a field already set stays); null when there is none. */
function withLangfuseUsage(usage: JsonObject | null): JsonObject | null {
  const details = found.first(FIELD["usage.langfuse"]);
  if (details === undefined) return usage;
  const parsed = parseJsonLooking(details);
  if (!isJsonObject(parsed)) return usage;
  for (const key of Object.keys(parsed)) {
    const n = asNumber(parsed[key] ?? null);
    const field = Object.hasOwn(LANGFUSE_USAGE_NAMES, key) ? LANGFUSE_USAGE_NAMES[key]! : key;
    if (n === undefined || (usage !== null && Object.hasOwn(usage, field))) continue;
    setOwn((usage ??= {}), field, n);
  }
  return usage;
}

/** The mapped attribute families; absent ones are left out. */
function mappedFamilies(): JsonObject {
  const families: JsonObject = {};
  for (const [family, field] of FAMILY_FIELDS) {
    const value = asText(found.first(field));
    if (value !== undefined) families[family] = value;
  }
  const parameters = modelParameters();
  if (parameters !== null) families["model_parameters"] = parameters;
  for (const [family, field] of JSON_FAMILY_FIELDS) {
    const value = jsonFamily(field);
    if (value !== undefined) families[family] = value;
  }
  return families;
}

/** Objects found under the field's keys are merged (later keys' entries win); any other value is taken from the first key that has one. */
function jsonFamily(field: number): JsonValue | undefined {
  let merged: JsonObject | undefined;
  let other: JsonValue | undefined;
  for (let mask = found.mask(field); mask !== 0; mask &= mask - 1) {
    const value = found.value(field, lowestRank(mask));
    if (value === undefined) continue;
    const parsed = parseJsonLooking(value);
    if (isJsonObject(parsed)) copyInto((merged ??= {}), parsed);
    else other ??= parsed;
  }
  return merged ?? other;
}

/** `model_parameters`, null when it has no entry. */
function modelParameters(): JsonObject | null {
  let parameters: JsonObject | null = null;
  const invocation = found.first(FIELD["model_parameters.invocation"]);
  if (invocation !== undefined) {
    const parsed = parseJsonLooking(invocation);
    parameters = {};
    if (isJsonObject(parsed)) copyInto(parameters, parsed);
    else parameters["invocation_parameters"] = parsed;
  }
  const langfuse = found.first(FIELD["model_parameters.langfuse"]);
  if (langfuse !== undefined) {
    const parsed = parseJsonLooking(langfuse);
    if (isJsonObject(parsed)) copyInto((parameters ??= {}), parsed);
  }
  const request = found.first(FIELD["model_parameters.request"]);
  if (isJsonObject(request)) copyInto((parameters ??= {}), request, "model");
  return parameters !== null && hasKeys(parameters) ? parameters : null;
}

function copyInto(target: JsonObject, source: JsonObject, except?: string): void {
  for (const key of Object.keys(source)) if (key !== except) setOwn(target, key, source[key] ?? null);
}

export function hasKeys(object: JsonObject): boolean {
  for (const _key in object) return true;
  return false;
}
