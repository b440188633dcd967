import type { Response } from "express";
import type { ChatCompletion, ChatCompletionChunk } from "../contract/chat.js";
import { RetryableError, errorText } from "../errors.js";
import { isJsonObject } from "../json.js";

/**
 * An OpenAI-compatible server (vLLM, Ollama, another tracehouse) that serves some model
 * names instead of the built-in models (INFERENCE_UPSTREAM_URL, _KEY, _MODELS). The request
 * is forwarded as the client sent it and the answer streamed back as it comes; what came back
 * is also assembled into one completion, so that it is recorded like a local one.
 */
export interface UpstreamSettings {
  /** Base URL ending before `/chat/completions`, e.g. `http://vllm:8000/v1`. */
  readonly url: string;
  readonly key: string | null;
  /** Model names it serves; a name ending in `*` is a prefix. */
  readonly models: readonly string[];
}

const FORWARDED_RESPONSE_HEADERS = ["content-type", "cache-control", "retry-after", "x-request-id"];

export class Upstream {
  constructor(private readonly settings: UpstreamSettings) {}

  serves(model: string): boolean {
    return this.settings.models.some((pattern) => (pattern.endsWith("*") ? model.startsWith(pattern.slice(0, -1)) : model === pattern));
  }

  /** The names it serves that are not prefixes, for the model list. */
  listedModels(): string[] {
    return this.settings.models.filter((m) => !m.endsWith("*"));
  }

  /**
   * Forwards the request and writes the upstream's answer (status, body) to `res` as it
   * arrives, leaving `res` open (the caller records, then ends it). Resolves with the
   * completion it carried when it succeeded, else null.
   */
  async forward(body: unknown, res: Response, signal: AbortSignal): Promise<ChatCompletion | null> {
    const answer = await this.post(body, signal);
    res.status(answer.status);
    for (const name of FORWARDED_RESPONSE_HEADERS) {
      const value = answer.headers.get(name);
      if (value !== null) res.setHeader(name, value);
    }
    const streamed = (answer.headers.get("content-type") ?? "").startsWith("text/event-stream");
    const text = await pipeBody(answer, res);
    if (answer.status !== 200) return null;
    return streamed ? assembleStream(text) : parseCompletion(text);
  }

  private async post(body: unknown, signal: AbortSignal): Promise<globalThis.Response> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.settings.key) headers.authorization = `Bearer ${this.settings.key}`;
    try {
      return await fetch(`${this.settings.url.replace(/\/+$/, "")}/chat/completions`, { method: "POST", headers, body: JSON.stringify(body), signal });
    } catch (err) {
      throw new RetryableError(`the inference upstream could not be reached: ${errorText(err)}`, 2);
    }
  }
}

/** Writes each piece of the body as it comes; returns the whole text. */
async function pipeBody(answer: globalThis.Response, res: Response): Promise<string> {
  const decoder = new TextDecoder();
  let text = "";
  if (answer.body) {
    for await (const piece of answer.body) {
      res.write(piece);
      text += decoder.decode(piece, { stream: true });
    }
  }
  text += decoder.decode();
  return text;
}

function parseCompletion(text: string): ChatCompletion | null {
  try {
    const parsed: unknown = JSON.parse(text);
    return isJsonObject(parsed) && Array.isArray(parsed.choices) ? (parsed as ChatCompletion) : null;
  } catch {
    return null;
  }
}

type AssembledChoice = ChatCompletion["choices"][number];

/** The completion an SSE stream of chunks adds up to (null when it held no chunk). */
export function assembleStream(text: string): ChatCompletion | null {
  let first: ChatCompletionChunk | null = null;
  let usage: ChatCompletion["usage"] | null = null;
  const choices = new Map<number, AssembledChoice>();
  for (const line of text.split("\n")) {
    if (!line.startsWith("data:")) continue;
    const data = line.slice(5).trim();
    if (data === "[DONE]" || data === "") continue;
    let chunk: ChatCompletionChunk;
    try {
      chunk = JSON.parse(data) as ChatCompletionChunk;
    } catch {
      continue;
    }
    if (!Array.isArray(chunk.choices)) continue;
    first ??= chunk;
    if (chunk.usage) usage = chunk.usage;
    for (const piece of chunk.choices) addPiece(choices, piece);
  }
  if (!first) return null;
  const assembled = [...choices.values()].sort((a, b) => a.index - b.index);
  return {
    id: first.id,
    object: "chat.completion",
    created: first.created,
    model: first.model,
    system_fingerprint: first.system_fingerprint ?? null,
    choices: assembled,
    usage: usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

function addPiece(choices: Map<number, AssembledChoice>, piece: ChatCompletionChunk["choices"][number]): void {
  const choice = choices.get(piece.index) ?? {
    index: piece.index,
    message: { role: "assistant" as const, content: null, refusal: null },
    logprobs: null,
    finish_reason: "stop" as const,
  };
  const content = piece.delta?.content;
  if (typeof content === "string") choice.message.content = (choice.message.content ?? "") + content;
  const tokens = piece.logprobs?.content;
  if (tokens) choice.logprobs = { content: [...(choice.logprobs?.content ?? []), ...tokens], refusal: null };
  if (piece.finish_reason) choice.finish_reason = piece.finish_reason;
  choices.set(piece.index, choice);
}
