import { MAX_STOP_SEQUENCES, type ChatCompletionReq, type ChatMessage, type MessageContent, type ToolCall } from "../contract/chat.js";
import type { ChatTurn, SamplingOptions } from "../lm/types.js";

/**
 * An OpenAI chat request as the language model reads it: the conversation as plain turns and
 * the sampling options of each choice.
 */

function textOf(content: MessageContent | null | undefined): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content.map((part) => (part.type === "text" ? part.text : part.refusal)).join("\n");
}

/** Tool calls have no place of their own in the model's format: they are written into the turn as text. */
function toolCallsText(calls: readonly ToolCall[]): string {
  return calls.map((call) => `<tool_call>${JSON.stringify({ id: call.id, name: call.function.name, arguments: call.function.arguments })}</tool_call>`).join("\n");
}

function turnOf(message: ChatMessage): ChatTurn {
  switch (message.role) {
    case "assistant": {
      const parts = [textOf(message.content), message.refusal ?? "", toolCallsText(message.tool_calls ?? [])].filter((p) => p !== "");
      return { role: "assistant", content: parts.join("\n") };
    }
    case "tool":
      return { role: "tool", content: textOf(message.content) };
    default:
      return { role: message.role, content: textOf(message.content) };
  }
}

export function turnsOf(messages: readonly ChatMessage[]): ChatTurn[] {
  return messages.map(turnOf);
}

export const choiceCount = (req: ChatCompletionReq): number => req.n ?? 1;
export const wantsLogprobs = (req: ChatCompletionReq): boolean => req.logprobs === true;

/**
 * The OpenAI sampling fields the model reads: a chat request's, or the params an evaluation job
 * asks its completer with (worker/jobs/chatCompleter.ts ChatAsk).
 */
export interface SamplingFields {
  readonly temperature?: number | null | undefined;
  readonly top_p?: number | null | undefined;
  readonly max_tokens?: number | null | undefined;
  readonly max_completion_tokens?: number | null | undefined;
  readonly stop?: string | readonly string[] | null | undefined;
  readonly seed?: number | null | undefined;
  readonly logprobs?: boolean | null | undefined;
  readonly top_logprobs?: number | null | undefined;
}

/**
 * The sampling options of choice `index`. `max_completion_tokens` wins over `max_tokens`;
 * both are capped by the server's limit (a request stays bounded on the one thread). `top_p`
 * 0 means greedy, as temperature 0 does. With a seed, choice i samples with seed + i, so the
 * choices of one request differ and a repeat of the request gives the same choices. Stop
 * sequences past the model's four are dropped (the chat contract refuses them; an evaluation's
 * params are not checked).
 */
export function samplingOf(req: SamplingFields, index: number, maxTokensCap: number): SamplingOptions {
  const greedy = req.temperature === 0 || req.top_p === 0;
  const stop = req.stop === null || req.stop === undefined ? [] : typeof req.stop === "string" ? [req.stop] : req.stop.slice(0, MAX_STOP_SEQUENCES);
  return {
    temperature: greedy ? 0 : (req.temperature ?? 1),
    topP: greedy ? 1 : (req.top_p ?? 1),
    maxTokens: Math.min(req.max_completion_tokens ?? req.max_tokens ?? maxTokensCap, maxTokensCap),
    stop,
    ...(req.seed === null || req.seed === undefined ? {} : { seed: req.seed + index }),
    topLogprobs: req.logprobs === true ? (req.top_logprobs ?? 0) : 0,
  };
}
