/**
 * A fake OpenAI-compatible server on 127.0.0.1 for real OpenAI-SDK clients: `POST
 * /v1/chat/completions` (not streamed) answers `answer` as `model` with `usage`, and keeps each
 * request's JSON body. The OpenAI Node SDK reaches it through its documented OPENAI_BASE_URL.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export type FakeOpenAi = { baseUrl: string; requests: unknown[]; close: () => Promise<void> };

export async function startFakeOpenAi(answer: { model: string; content: string; usage: { prompt_tokens: number; completion_tokens: number } }): Promise<FakeOpenAi> {
  const requests: unknown[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/chat/completions") {
        res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      requests.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      const { prompt_tokens, completion_tokens } = answer.usage;
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion",
        created: 1_767_607_200,
        model: answer.model,
        choices: [{ index: 0, message: { role: "assistant", content: answer.content }, finish_reason: "stop", logprobs: null }],
        usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
      }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, requests, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
