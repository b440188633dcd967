import type { Config } from "../config.js";
import type { ChatRole, ChatTurn } from "../lm/index.js";
import { ChatCompletionError, type ChatAnswer, type ChatAsk, type ChatCompleter } from "../worker/jobs/chatCompleter.js";
import { ModelCache } from "./modelCache.js";
import { resolveModel, type ModelResolver } from "./models.js";

const ROLES: ReadonlySet<string> = new Set<ChatRole>(["system", "developer", "user", "assistant", "tool"]);
const turnOf = (m: { role: string; content: string }): ChatTurn => ({ role: ROLES.has(m.role) ? (m.role as ChatRole) : m.role === "function" ? "tool" : "user", content: m.content });

/**
 * The service's own chat completion for evaluation and scoring jobs, in process: the built-in
 * base models and the trained models of the job's project, sampled as `/v1/chat/completions`
 * samples them (temperature or top_p 0 = greedy; tokens capped by CHAT_MAX_TOKENS), with a
 * loaded-model cache of its own. Not recorded as a chat call: the job's calls carry the usage.
 */
export function localChatCompleter(config: Config, resolvers: readonly ModelResolver[]): ChatCompleter {
  const cache = new ModelCache(config.INFERENCE_MODEL_CACHE_BYTES, async (weights) => (await import("../lm/index.js")).loadModel(weights));
  return {
    async complete(ask: ChatAsk, signal?: AbortSignal): Promise<ChatAnswer> {
      const resolved = await resolveModel(resolvers, ask.model, (projectId) => projectId === ask.projectId);
      if (!resolved) throw new ChatCompletionError(`The model \`${ask.model}\` does not exist or you do not have access to it.`);
      const lease = await cache.acquire(resolved);
      try {
        const greedy = ask.temperature === 0 || ask.top_p === 0;
        const completion = await lease.model.complete(
          ask.messages.map(turnOf),
          {
            temperature: greedy ? 0 : (ask.temperature ?? 1),
            topP: greedy ? 1 : (ask.top_p ?? 1),
            maxTokens: Math.min(ask.max_tokens ?? config.CHAT_MAX_TOKENS, config.CHAT_MAX_TOKENS),
            stop: (ask.stop ?? []).slice(0, 4),
            topLogprobs: 0,
          },
          () => {
            if (signal?.aborted) throw signal.reason;
          },
        );
        return { text: completion.text, model: resolved.modelId, promptTokens: completion.promptTokens, completionTokens: completion.completionTokens };
      } finally {
        lease.release();
      }
    },
  };
}
