/**
 * What a span's GenAI operation (`gen_ai.operation.name`, kept as the call's
 * `attributes.operation`) says about the usage it reports. The OpenTelemetry GenAI conventions
 * put a model call's tokens on its inference span (`chat`, `text_completion`,
 * `generate_content`, `embeddings`); agent and tool spans, and frameworks' own orchestration
 * spans, report the total of what ran below them again (Vercel AI SDK 7: `invoke_agent <fn>`
 * carries the sum of its `chat <model>` spans; Mastra: `invoke_workflow`; Vercel AI SDK up to
 * 6: `ai.generateText` over `ai.generateText.doGenerate`). Counting both
 * counts every token twice, so totals take an inference's usage as its own and an
 * aggregate's as none of its own (store/usage/ownUsage.ts applies it).
 */

/** The call attribute that holds the span's `gen_ai.operation.name` (else Vercel AI SDK's `ai.operationId`). */
export const OPERATION_ATTRIBUTE = "operation";

/**
 * Operations whose usage is the span's own: one request to a model. Vercel AI SDK up to 6
 * names no GenAI operation; its provider calls are `ai.<function>.doGenerate` / `.doStream` /
 * `ai.embed(Many).doEmbed`, each under an `ai.<function>` span that repeats their usage, whose
 * model is named differently (the requested id, where the call has the response's).
 */
export const INFERENCE_OPERATIONS = [
  "chat", "text_completion", "generate_content", "embeddings",
  "ai.generateText.doGenerate", "ai.streamText.doStream", "ai.generateObject.doGenerate", "ai.streamObject.doStream", "ai.embed.doEmbed", "ai.embedMany.doEmbed",
] as const;

/**
 * Operations whose usage is the total of the spans below them: the conventions' agent and
 * tool operations, and the orchestration steps frameworks name (Vercel AI SDK 7's
 * `agent_step`, Mastra's `invoke_workflow`).
 */
export const AGGREGATE_OPERATIONS = [
  "invoke_agent", "create_agent", "execute_tool", "invoke_workflow", "agent_step",
  "ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject", "ai.embed", "ai.embedMany", "ai.toolCall",
] as const;
