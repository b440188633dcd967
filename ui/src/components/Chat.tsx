import type { Json, JsonObject } from "../types";
import { JsonView, LongText } from "./JsonView";

/**
 * Chat messages (OpenAI and Anthropic style: `{role, content}` where content is a string or
 * a list of parts) shown as a conversation.
 */
export interface ChatMessage {
  role: string;
  content: Json;
}

const isObject = (v: Json | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);

function asMessages(value: Json | undefined): ChatMessage[] | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  const out: ChatMessage[] = [];
  for (const m of value) {
    if (!isObject(m) || typeof m.role !== "string" || !("content" in m || "tool_calls" in m)) return null;
    out.push({ role: m.role, content: m.content ?? m.tool_calls ?? null });
  }
  return out;
}

/** The conversation in a call's inputs (`messages`, plus Anthropic's `system`), or null. */
export function chatOfInputs(inputs: JsonObject | undefined): ChatMessage[] | null {
  if (!inputs) return null;
  const messages = asMessages(inputs.messages);
  if (!messages) return null;
  return typeof inputs.system === "string" ? [{ role: "system", content: inputs.system }, ...messages] : messages;
}

/** The reply in a call's output: OpenAI `choices[].message`, Anthropic `{role, content}`, or null. */
export function chatOfOutput(output: Json | undefined): ChatMessage[] | null {
  if (!isObject(output)) return null;
  if (Array.isArray(output.choices)) {
    const replies = output.choices.flatMap((c) => (isObject(c) && isObject(c.message) ? [c.message] : []));
    return asMessages(replies);
  }
  if (typeof output.role === "string" && "content" in output) return asMessages([output]);
  return null;
}

function Part({ part, projectId }: { part: Json; projectId: string }) {
  if (typeof part === "string") return <LongText text={part} limit={2000} className="chat-text" />;
  if (isObject(part)) {
    if (part.type === "text" && typeof part.text === "string") return <LongText text={part.text} limit={2000} className="chat-text" />;
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
