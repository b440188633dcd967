import type { ModelThreads } from "../lm/modelThreads.js";
import type { ChatRole, ChatTurn } from "../lm/types.js";
import { ChatCompletionError, type ChatAnswer, type ChatAsk, type ChatCompleter } from "../worker/jobs/chatCompleter.js";
import { samplingOf } from "./chatRequest.js";
import { resolveModel, weightsRefOf, type ModelResolver } from "./models.js";

const ROLES: ReadonlySet<string> = new Set<ChatRole>(["system", "developer", "user", "assistant", "tool"]);
const turnOf = (m: { role: string; content: string }): ChatTurn => ({ role: ROLES.has(m.role) ? (m.role as ChatRole) : m.role === "function" ? "tool" : "user", content: m.content });

export interface LocalCompleterDeps {
  /** Asked in order; the first that knows the model name serves it. */
  readonly resolvers: readonly ModelResolver[];
  /** The process's model threads, shared with `/v1/chat/completions` and training. */
  readonly modelThreads: ModelThreads;
  /** The most tokens one completion may generate (CHAT_MAX_TOKENS). */
  readonly maxTokens: number;
}

/**
 * The service's own chat completion for evaluation and scoring jobs, in its model threads: the built-in
 * base models and the trained models of the job's project, sampled as `/v1/chat/completions`
 * samples them. Not recorded as a chat call: the job's calls carry the usage.
 */
export function localChatCompleter(deps: LocalCompleterDeps): ChatCompleter {
  return {
    async complete(ask: ChatAsk, signal?: AbortSignal): Promise<ChatAnswer> {
      const resolved = await resolveModel(deps.resolvers, ask.model, (projectId) => projectId === ask.projectId);
      if (!resolved) throw new ChatCompletionError(`The model \`${ask.model}\` does not exist or you do not have access to it.`);
      const completion = await deps.modelThreads.complete(weightsRefOf(resolved), ask.messages.map(turnOf), samplingOf(ask, 0, deps.maxTokens), { signal });
      return { text: completion.text, model: resolved.modelId, promptTokens: completion.promptTokens, completionTokens: completion.completionTokens };
    },
  };
}
