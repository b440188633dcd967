import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Page, Request } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, client, KEY_ACME, startTestService } from "../support/service.js";
import { bigTrace, browserSession, completeCall, SCREENSHOTS } from "./browser.js";
import { jsonBody } from "../otlp/httpSupport.js";
import { DEFAULT_USAGE_LIMIT } from "../../services/contract/usage.js";

/**
 * The built web UI in Debian's chromium (playwright-core) against a running service, with
 * data written through the API: what a user sees on each main page. Screenshots go to
 * test-output/ui/ for a person to look at. Run on the ClickHouse 18.16 project only (see
 * vitest.config.ts).
 */
const PROJECT_NAME = `ui${randomBytes(4).toString("hex")}`;
const PROJECT = `acme/${PROJECT_NAME}`;
/** One call more than `/calls/usage` reads at once by default: the traces table shows "—" for its totals. */
const BIG_TRACE_CALLS = DEFAULT_USAGE_LIMIT + 1;
/** The browser renders at its own pace on a loaded machine: polls wait up to 20 s (no timing is asserted). */
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 20_000, interval: 100 });

describe("web UI", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  const browser = browserSession();
  let page: Page;
  const t0 = Date.now() - 60_000;
  const url = (path: string) => `${service.url}/ui${path}`;
  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });

  beforeAll(async () => {
    service = await startTestService();
    const api = client(service.url, KEY_ACME);
    const chat = { messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "What is the capital of France?" }], model: "gpt-4o-mini" };
    // An 8×8 PNG: once inline as a data URI, once uploaded (its ref is the Weave clients' image object).
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC";
    const form = new FormData();
    form.append("project_id", PROJECT);
    form.append("file", new Blob([Buffer.from(png, "base64")]), "red.png");
    const uploaded = (await (await fetch(`${service.url}/image/create`, { method: "POST", headers: { authorization: basic(KEY_ACME) }, body: form })).json()) as { ref: string };
    const calls = [
      completeCall(PROJECT, { id: "root-1", trace_id: "t1", op_name: "agent_run", inputs: { question: "capital of France" }, output: "Paris" }, t0, 0, 900),
      completeCall(
        PROJECT,
        {
          id: "llm-1",
          trace_id: "t1",
          parent_id: "root-1",
          op_name: "openai.chat.completions.create",
          inputs: chat,
          output: { choices: [{ message: { role: "assistant", content: "Paris." } }] },
          summary: { usage: { "gpt-4o-mini": { requests: 1, prompt_tokens: 20, completion_tokens: 2, total_tokens: 22 } } },
        },
        t0,
        100,
        300,
      ),
      completeCall(PROJECT, { id: "tool-1", trace_id: "t1", parent_id: "root-1", op_name: "lookup_tool", inputs: { city: "Paris" }, exception: "ValueError: the lookup service is down" }, t0, 500, 200),
      completeCall(PROJECT, { id: "root-2", trace_id: "t2", op_name: "summarize", inputs: { text: "a long text", inline: `data:image/png;base64,${png}`, uploaded: uploaded.ref }, output: "short" }, t0, 2000, 100),
      ...[1, 2, 3].map((n) =>
        completeCall(
          PROJECT,
          {
            id: `turn-${n}`,
            trace_id: `tt${n}`,
            op_name: "chat_turn",
            thread_id: "thread-a",
            turn_id: `turn-${n}`,
            inputs: { messages: [{ role: "user", content: `question number ${n}` }] },
            output: { choices: [{ message: { role: "assistant", content: `answer number ${n}` } }] },
          },
          t0,
          3000 + n * 1000,
          400,
        ),
      ),
    ];
    await api.json(`/v2/${PROJECT}/calls/complete`, { batch: calls });
    const big = bigTrace(PROJECT, "big", BIG_TRACE_CALLS, t0 - 3_600_000);
    for (let i = 0; i < big.length; i += 5000) await api.json(`/v2/${PROJECT}/calls/complete`, { batch: big.slice(i, i + 5000) });
    await api.json("/feedback/create", { project_id: PROJECT, weave_ref: `weave:///${PROJECT}/call/root-1`, feedback_type: "wandb.reaction.1", payload: { emoji: "👍" } });
    const table = await api.json<{ digest: string }>("/table/create", { table: { project_id: PROJECT, rows: [{ question: "2+2", answer: "4" }, { question: "3+3", answer: "6" }] } });
    await api.json("/obj/create", { obj: { project_id: PROJECT, object_id: "arith", builtin_object_class: "Dataset", val: { rows: `weave:///${PROJECT}/table/${table.digest}` } } });
    // A GenAI trace over OTLP, as Vercel AI SDK 7 writes it: messages in the conventions' parts form, the agent span
    // repeating its chat span's usage (counted once: 50 tokens), and a tool call that failed.
    const genAiTrace = "7a".repeat(16);
    const spans = jsonBody({
      spans: [
        {
          traceId: genAiTrace, spanId: "7b".repeat(8), name: "invoke_agent weather", start: BigInt(t0) * 1_000_000n + 7_000_000_000n, end: BigInt(t0) * 1_000_000n + 7_900_000_000n,
          attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 10 },
        },
        {
          traceId: genAiTrace, spanId: "7c".repeat(8), parentSpanId: "7b".repeat(8), name: "chat gpt-4o-mini",
          start: BigInt(t0) * 1_000_000n + 7_100_000_000n, end: BigInt(t0) * 1_000_000n + 7_500_000_000n,
          attributes: {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 10,
            "gen_ai.input.messages": JSON.stringify([{ role: "user", parts: [{ type: "text", content: "What is the weather in Lyon?" }] }]),
            "gen_ai.output.messages": JSON.stringify([{ role: "assistant", parts: [{ type: "tool_call", id: "call-1", name: "weather", arguments: { city: "Lyon" } }], finish_reason: "tool_call" }]),
          },
        },
        {
          traceId: genAiTrace, spanId: "7d".repeat(8), parentSpanId: "7b".repeat(8), name: "execute_tool weather",
          start: BigInt(t0) * 1_000_000n + 7_600_000_000n, end: BigInt(t0) * 1_000_000n + 7_800_000_000n,
          attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather" }, status: { code: 2, message: "weather service unavailable" },
        },
      ],
    });
    // A model call as Vercel AI SDK 6 writes it: its messages as JSON text, tool parts named `tool-call` / `tool-result`.
    const v6Messages = JSON.stringify([
      { role: "user", content: [{ type: "text", text: "Weather in Oslo?" }] },
      { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "weather", input: { city: "Oslo" } }] },
      { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "weather", output: { type: "json", value: { sky: "snow" } } }] },
    ]);
    const v6 = jsonBody({
      spans: [{
        traceId: "6a".repeat(16), spanId: "6b".repeat(8), name: "ai.generateText.doGenerate",
        start: BigInt(t0 - 7_200_000) * 1_000_000n, end: BigInt(t0 - 7_199_500) * 1_000_000n,
        attributes: { "ai.operationId": "ai.generateText.doGenerate", "ai.model.id": "gpt-4o-mini", "ai.prompt.messages": v6Messages, "ai.response.text": "Snowing in Oslo." },
      }],
    });
    expect((await fetch(`${service.url}/otel/v1/traces`, { method: "POST", headers: { authorization: basic(KEY_ACME), project_id: PROJECT, "content-type": "application/json" }, body: v6 })).status).toBe(200);
    const otlp = await fetch(`${service.url}/otel/v1/traces`, { method: "POST", headers: { authorization: basic(KEY_ACME), project_id: PROJECT, "content-type": "application/json" }, body: spans });
    expect(otlp.status).toBe(200);
    // A plain log record of the tool's span (OTLP logs), shown on its call's page.
    const toolLog = JSON.stringify({
      resourceLogs: [{
        scopeLogs: [{
          scope: { name: "weather-tool" },
          logRecords: [{ timeUnixNano: String(BigInt(t0) * 1_000_000n + 7_700_000_000n), severityNumber: 13, severityText: "WARN", traceId: genAiTrace, spanId: "7d".repeat(8), body: { stringValue: "weather API timed out after 3 retries" } }],
        }],
      }],
    });
    const logs = await fetch(`${service.url}/otel/v1/logs`, { method: "POST", headers: { authorization: basic(KEY_ACME), project_id: PROJECT, "content-type": "application/json" }, body: toolLog });
    expect(logs.status).toBe(200);
    page = browser.page;
  });

  afterAll(async () => {
    await service?.stop();
  });

  it("serves the UI at /ui/ with index.html for deep links, and redirects / there", async () => {
    const root = await fetch(`${service.url}/`, { redirect: "manual" });
    expect({ status: root.status, location: root.headers.get("location") }).toEqual({ status: 302, location: "/ui/" });
    const deep = await fetch(url(`/${PROJECT}/calls/root-1`));
    expect(deep.status).toBe(200);
    expect(await deep.text()).toContain('<div id="root">');
    const missing = await fetch(url("/assets/no-such-file.js"));
    expect({ status: missing.status, body: await missing.json() }).toEqual({ status: 404, body: { detail: "no such asset", message: "no such asset" } });
  });

  it("refuses a wrong key on the login page, saying so", async () => {
    await page.goto(url("/"));
    await page.getByLabel("API key").fill("not-a-key-0123456789");
    await page.getByRole("button", { name: "Log in" }).click();
    await poll(() => page.getByRole("alert").textContent()).toContain("missing or invalid API key");
    expect(await page.evaluate(() => sessionStorage.getItem("tracehouse.apiKey"))).toBeNull();
    expect(page.url()).not.toContain("not-a-key");
    await shot("login-refused");
  });

  it("logs in, lists the key's projects and shows the calls just logged", async () => {
    await page.getByLabel("API key").fill(KEY_ACME);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: PROJECT }).click();
    await page.waitForURL(url(`/${PROJECT}/traces`));
    const rows = page.locator(".grid-row");
    await poll(() => rows.count()).toBeGreaterThan(0);
    // Trace roots by default, newest first: the OTLP agent, the turns, then summarize, agent_run, the big trace, the AI SDK 6 call.
    await poll(() => page.locator(".grid-row [role=cell]:first-child").allTextContents()).toEqual(["invoke_agent weather", "chat_turn", "chat_turn", "chat_turn", "summarize", "agent_run", "big_root", "ai.generateText.doGenerate"]);
    await shot("traces");
  });

  it("shows each trace's tokens and cost counted once and a failed call below as 'descendant error', and opens the GenAI trace's conversation", async () => {
    // One /calls/usage and one query of failed calls for the page's roots, not one per row.
    const asked: { path: string; body: { call_ids?: string[]; filter?: { trace_ids?: string[] } } }[] = [];
    const listen = (req: Request) => {
      const path = new URL(req.url()).pathname;
      if (path === "/calls/usage" || path === "/calls/stream_query") asked.push({ path, body: req.postDataJSON() as (typeof asked)[number]["body"] });
    };
    page.on("request", listen);
    await page.goto(url(`/${PROJECT}/traces`));
    const cells = (id: string) => page.locator(`.grid-row[data-call-id="${id}"] [role=cell]`);
    // Op, Status, Started, Latency, Tokens, Cost, User: the status and the last three but one.
    const shown = async (id: string) => {
      const texts = await cells(id).allTextContents();
      return { op: texts[0], status: texts[1], tokens: texts[4], cost: texts[5] };
    };
    // The OTLP agent: its chat span's 40 + 10 tokens once (the agent span repeats them), priced as gpt-4o-mini
    // (40 × 1.5e-7 + 10 × 6e-7 = $0.000012); its tool span failed.
    await poll(() => shown("7b".repeat(8))).toEqual({ op: "invoke_agent weather", status: "descendant error", tokens: "50", cost: "$0.000012" });
    // A Weave root without a rolled-up summary: its model call's 22 tokens (20 × 1.5e-7 + 2 × 6e-7), its failed tool.
    await poll(() => shown("root-1")).toEqual({ op: "agent_run", status: "descendant error", tokens: "22", cost: "$0.0000042" });
    expect(await shown("root-2")).toEqual({ op: "summarize", status: "success", tokens: "", cost: "" });
    // A trace larger than /calls/usage reads at once: no figures rather than wrong ones.
    expect(await shown("big-0")).toEqual({ op: "big_root", status: "success", tokens: "—", cost: "—" });
    page.off("request", listen);
    const roots = ["7b".repeat(8), "turn-3", "turn-2", "turn-1", "root-2", "root-1", "big-0", "6b".repeat(8)];
    expect(asked.filter((a) => a.path === "/calls/usage").map((a) => a.body.call_ids)).toEqual([roots]);
    expect(asked.filter((a) => a.body.filter?.trace_ids).map((a) => a.body.filter!.trace_ids!.length)).toEqual([roots.length]);
    await shot("traces-totals");
    await cells("7b".repeat(8)).first().click();
    await page.waitForURL(url(`/${PROJECT}/calls/${"7b".repeat(8)}`));
    await poll(() => page.locator(".tree-row .tree-label").allTextContents()).toEqual(["invoke_agent weather", "chat gpt-4o-mini", "execute_tool weather"]);
    await page.locator(".tree-row", { hasText: "chat gpt-4o-mini" }).click();
    const chats = page.locator(".call-detail .chat");
    await poll(() => chats.count()).toBe(2);
    await poll(() => chats.nth(0).textContent()).toBe("userWhat is the weather in Lyon?");
    expect(await chats.nth(1).locator(".chat-tool-name").textContent()).toBe("calls weather");
    await shot("trace-genai-conversation");
    // The failed tool call's page shows its span's log record.
    await page.locator(".tree-row", { hasText: "execute_tool weather" }).click();
    const records = page.locator('.call-detail table[aria-label="Log records"] tbody tr');
    await poll(() => records.count()).toBe(1);
    expect(await records.locator("td").nth(1).textContent()).toBe("WARN");
    expect(await records.locator("td").nth(3).textContent()).toContain("weather API timed out after 3 retries");
    expect(await page.locator(".call-detail h3", { hasText: "Log records" }).textContent()).toBe("Log records (1)");
    await shot("trace-genai-log-records");
  });

  it("filters by op and by status", async () => {
    await page.goto(url(`/${PROJECT}/traces`));
    await page.getByLabel("Op").fill("summ");
    await page.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.locator(".grid-row [role=cell]:first-child").allTextContents()).toEqual(["summarize"]);
    await page.getByLabel("Op").fill("");
    await page.getByLabel("Status").selectOption("error");
    await page.getByText("all calls").click();
    await page.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.locator(".grid-row [role=cell]:first-child").allTextContents()).toEqual(["execute_tool weather", "lookup_tool"]);
    await shot("traces-filtered");
  });

  it("loads the next page of calls as the table scrolls, and names a $expr that is no JSON", async () => {
    await page.goto(url(`/${PROJECT}/traces`));
    // The big trace's 10,000 steps: pages of 100.
    await page.getByLabel("Op").fill("step_");
    await page.getByText("all calls").click();
    await page.getByRole("button", { name: "Apply" }).click();
    const foot = page.locator(".table-foot");
    await poll(() => foot.textContent()).toBe("100 calls shown, more as you scroll");
    await page.locator(".grid-body").evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await poll(() => foot.textContent()).toBe("200 calls shown, more as you scroll");
    await page.getByLabel("Expression").fill("{not json");
    await page.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.getByRole("alert").textContent()).toContain("The $expr box holds no valid JSON");
    expect(await page.locator(".grid-row").count()).toBe(0);
  });

  it("opens a trace: its child calls, the input text and the exception of a failed call", async () => {
    await page.goto(url(`/${PROJECT}/traces`));
    await page.locator(".grid-row", { hasText: "agent_run" }).click();
    await page.waitForURL(url(`/${PROJECT}/calls/root-1`));
    await poll(() => page.locator(".tree-row .tree-label").allTextContents()).toEqual(["agent_run", "openai.chat.completions.create", "lookup_tool"]);
    await poll(() => page.locator(".feedback").textContent()).toContain("👍");
    await page.locator(".tree-row", { hasText: "openai.chat.completions.create" }).click();
    await poll(() => page.locator(".call-detail .chat").first().textContent()).toContain("What is the capital of France?");
    expect(await page.locator(".call-detail").textContent()).toContain("gpt-4o-mini");
    await shot("trace-llm-call");
    await page.locator(".tree-row", { hasText: "lookup_tool" }).click();
    await page.waitForURL(url(`/${PROJECT}/calls/tool-1`));
    await poll(() => page.locator(".exception").textContent()).toBe("ValueError: the lookup service is down");
    await page.getByLabel("Note").fill("flaky upstream");
    await page.getByRole("button", { name: "Add note" }).click();
    await poll(() => page.locator(".feedback").textContent()).toContain("flaky upstream");
    await shot("trace-failed-call");
  });

  it("shows an OTLP GenAI model call's messages (the conventions' parts form) as a conversation with its tool call", async () => {
    await page.goto(url(`/${PROJECT}/calls/${"7c".repeat(8)}`));
    const chats = page.locator(".call-detail .chat");
    await poll(() => chats.count()).toBe(2);
    await poll(() => chats.nth(0).textContent()).toBe("userWhat is the weather in Lyon?");
    await poll(() => chats.nth(1).locator(".chat-role").textContent()).toBe("assistant");
    expect(await chats.nth(1).locator(".chat-tool-name").textContent()).toBe("calls weather");
    expect(await chats.nth(1).textContent()).toContain("Lyon");
    await shot("trace-genai-call");
  });

  it("shows a Vercel AI SDK 6 model call's messages (JSON text, its tool parts) as a conversation", async () => {
    await page.goto(url(`/${PROJECT}/calls/${"6b".repeat(8)}`));
    const messages = page.locator(".call-detail .chat").first().locator(".chat-msg");
    await poll(() => messages.count()).toBe(3);
    expect(await messages.locator(".chat-role").allTextContents()).toEqual(["user", "assistant", "tool"]);
    expect(await messages.nth(0).locator(".chat-content").textContent()).toBe("Weather in Oslo?");
    expect(await messages.nth(1).locator(".chat-tool-name").textContent()).toBe("calls weather");
    expect(await messages.nth(2).locator(".chat-tool-name").textContent()).toBe("tool result");
    expect(await messages.nth(2).textContent()).toContain("snow");
    await shot("trace-vercel6-call");
  });

  it("shows base64 images and image refs as images", async () => {
    await page.goto(url(`/${PROJECT}/calls/root-2`));
    const images = page.locator(".call-detail img.j-image");
    await poll(() => images.count()).toBe(2);
    await poll(() => images.evaluateAll((imgs) => imgs.map((img) => (img as HTMLImageElement).naturalWidth))).toEqual([8, 8]);
  });

  it("opens a thread and shows its turns in order", async () => {
    await page.goto(url(`/${PROJECT}/threads`));
    await page.getByRole("link", { name: "thread-a" }).click();
    await page.waitForURL(url(`/${PROJECT}/threads/thread-a`));
    await poll(() => page.locator(".turn .turn-in").allTextContents()).toEqual(["userquestion number 1", "userquestion number 2", "userquestion number 3"]);
    expect(await page.locator(".turn .turn-out").allTextContents()).toEqual(["assistantanswer number 1", "assistantanswer number 2", "assistantanswer number 3"]);
    await shot("thread");
  });

  it(`opens a trace of ${BIG_TRACE_CALLS.toLocaleString("en-US")} calls rendering only the rows on screen`, async () => {
    await page.goto(url(`/${PROJECT}/calls/big-0`));
    await poll(() => page.locator(".tree-head").textContent()).toContain(`${BIG_TRACE_CALLS.toLocaleString("en-US")} calls`);
    const rendered = await page.locator(".tree-row").count();
    expect(rendered).toBeGreaterThan(10);
    expect(rendered).toBeLessThan(150);
    await page.getByTestId("trace-scroller").evaluate((el) => el.scrollTo(0, el.scrollHeight));
    // Depth first, children in start order: the last row is the root's last child's last child's ... last child.
    let last = 0;
    while (last * 10 + 10 < BIG_TRACE_CALLS) last = last * 10 + 10;
    await poll(() => page.locator(".tree-row").last().getAttribute("data-call-id")).toBe(`big-${last}`);
    expect(await page.locator(".tree-row").count()).toBeLessThan(150);
    await shot("trace-10000");
  });

  it("shows datasets with their rows, and usage charts", async () => {
    await page.goto(url(`/${PROJECT}/datasets`));
    await page.getByRole("link", { name: "arith" }).click();
    await poll(() => page.locator("table[aria-label=Rows] tbody tr").count()).toBe(2);
    expect(await page.locator("table[aria-label=Rows]").textContent()).toContain("3+3");
    await shot("dataset");
    await page.goto(url(`/${PROJECT}/usage`));
    await poll(() => page.locator(".chart canvas").count()).toBeGreaterThanOrEqual(2);
    await poll(() => page.locator("table[aria-label='Usage per model']").textContent()).toContain("gpt-4o-mini");
    await shot("usage");
  });

  it("shows the API's error message in the page, and logging out forgets the key", async () => {
    await page.goto(url(`/${PROJECT}/calls/no-such-call`));
    await poll(() => page.getByRole("alert").first().textContent()).toContain("No call no-such-call");
    await page.goto(url(`/${PROJECT}/traces`));
    await page.getByLabel("Expression").fill('{"$eq": [{"$getField": "no_such_field"}, {"$literal": 1}]}');
    await page.getByRole("button", { name: "Apply" }).click();
    await poll(() => page.getByRole("alert").textContent()).toMatch(/no_such_field/);
    await page.getByRole("button", { name: "Log out" }).click();
    await page.getByLabel("API key").waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("tracehouse.apiKey"))).toBeNull();
  });
});
