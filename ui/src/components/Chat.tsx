import type { Json, JsonObject } from "../types";
import { JsonView, LongText } from "./JsonView";

/**
 * Chat messages shown as a conversation: OpenAI and Anthropic style (`{role, content}` where
 * content is a string or a list of parts), and the OpenTelemetry GenAI conventions' parts form
 * (`{role, parts: [{type: "text", content}, {type: "tool_call", …}, …]}`, as Vercel AI SDK 7
 * and Mastra send it), and Vercel AI SDK 6's (`ai.prompt.messages`: the messages as JSON text,
 * parts `tool-call` / `tool-result`).
 */
export interface ChatMessage {
  role: string;
  content: Json;
}

const isObject = (v: Json | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

/** Messages kept as the JSON text a client sent them in (Vercel AI SDK 6's `ai.prompt.messages`). */
function parsedText(value: Json | undefined): Json | undefined {
  if (typeof value !== "string" || !value.trimStart().startsWith("[")) return value;
  try {
    return JSON.parse(value) as Json;
  } catch {
    return value;
  }
}

function asMessages(value: Json | undefined, defaultRole?: string): ChatMessage[] | null {
  value = parsedText(value);
  if (!Array.isArray(value) || value.length === 0) return null;
  const out: ChatMessage[] = [];
  for (const m of value) {
    if (!isObject(m)) return null;
    const role = typeof m.role === "string" ? m.role : defaultRole;
    if (role === undefined || !("content" in m || "tool_calls" in m || Array.isArray(m.parts))) return null;
    out.push({ role, content: m.content ?? m.tool_calls ?? m.parts ?? null });
  }
  return out;
}

/**
 * The conversation in a call's inputs (`messages`, plus Anthropic's `system`; or a list of
 * messages the OTLP mapping kept under `value`), or null.
 */
export function chatOfInputs(inputs: JsonObject | undefined): ChatMessage[] | null {
  if (!inputs) return null;
  const messages = asMessages(inputs.messages) ?? asMessages(inputs.value);
  if (!messages) return null;
  return typeof inputs.system === "string" ? [{ role: "system", content: inputs.system }, ...messages] : messages;
}

/** The reply in a call's output: OpenAI `choices[].message`, Anthropic `{role, content}`, a list of GenAI messages, or null. */
export function chatOfOutput(output: Json | undefined): ChatMessage[] | null {
  if (Array.isArray(output)) return asMessages(output);
  if (!isObject(output)) return null;
  if (Array.isArray(output.choices)) {
    const replies = output.choices.flatMap((c) => (isObject(c) && isObject(c.message) ? [c.message] : []));
    // A GenAI `gen_ai.choice` event's message may leave its role out: it is the assistant's.
    return asMessages(replies, "assistant");
  }
  if (typeof output.role === "string" && ("content" in output || Array.isArray(output.parts))) return asMessages([output]);
  return null;
}

function Part({ part, projectId }: { part: Json; projectId: string }) {
  if (typeof part === "string") return <LongText text={part} limit={2000} className="chat-text" />;
  if (isObject(part)) {
    if (part.type === "text" && typeof part.text === "string") return <LongText text={part.text} limit={2000} className="chat-text" />;
    if (part.type === "text" && typeof part.content === "string") return <LongText text={part.content} limit={2000} className="chat-text" />;
    if (part.type === "tool_call" && typeof part.name === "string") {
      return (
        <div className="chat-tool">
          <div className="chat-tool-name">calls {part.name}</div>
          <JsonView value={part.arguments ?? null} projectId={projectId} openDepth={1} />
        </div>
      );
    }
    if (part.type === "tool-call" && typeof part.toolName === "string") {
      return (
        <div className="chat-tool">
          <div className="chat-tool-name">calls {part.toolName}</div>
          <JsonView value={part.input ?? part.args ?? null} projectId={projectId} openDepth={1} />
        </div>
      );
    }
    if (part.type === "tool-result") {
      // AI SDK 6 wraps the tool's value: `{type: "json" | "text", value}`.
      const output = isObject(part.output) && "value" in part.output ? part.output.value : part.output;
      return (
        <div className="chat-tool">
          <div className="chat-tool-name">tool result</div>
          <JsonView value={output ?? part.result ?? null} projectId={projectId} openDepth={1} />
        </div>
      );
    }
    if (part.type === "tool_call_response") {
      return (
        <div className="chat-tool">
          <div className="chat-tool-name">tool result</div>
          <JsonView value={part.response ?? part.result ?? null} projectId={projectId} openDepth={1} />
        </div>
      );
    }
    const imageUrl = isObject(part.image_url) ? part.image_url.url : part.image_url;
    if (part.type === "image_url" && typeof imageUrl === "string") return <img className="j-image" src={imageUrl} alt="image in the message" />;
    const source = part.source;
    if (part.type === "image" && isObject(source) && source.type === "base64" && typeof source.data === "string") {
      return <img className="j-image" src={`data:${String(source.media_type ?? "image/png")};base64,${source.data}`} alt="image in the message" />;
    }
  }
  return <JsonView value={part} projectId={projectId} openDepth={1} />;
}

export function Conversation({ messages, projectId }: { messages: ChatMessage[]; projectId: string }) {
  return (
    <div className="chat">
      {messages.map((m, i) => (
        <div key={i} className={`chat-msg chat-${m.role}`}>
          <div className="chat-role">{m.role}</div>
          <div className="chat-content">
            {Array.isArray(m.content) ? m.content.map((p, j) => <Part key={j} part={p} projectId={projectId} />) : <Part part={m.content} projectId={projectId} />}
          </div>
        </div>
      ))}
    </div>
  );
}
