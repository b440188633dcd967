import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, KEY_ACME, startTestService } from "../support/service.js";
import { v2Client } from "../v2/support.js";
import { browserSession, completeCall, SCREENSHOTS } from "./browser.js";

/**
 * The web UI's evaluations and annotation queue pages in Debian's chromium, with data written
 * through the API: two /v2/ evaluation runs compared row by row, and an annotation queue gone
 * through (one item scored and completed, one skipped). Run on the ClickHouse 18.16 project only.
 */
const PROJECT = `acme/uieval${randomBytes(4).toString("hex")}`;
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 20_000, interval: 100 });

const QUESTIONS = [{ q: "1+1" }, { q: "2+2" }, { q: "3+3" }];
/** Per model: its answer to each question and the scores; the models agree on the first row only. */
const PLAN = [
  { model: "model-a", answers: ["2", "4", "7"], exact: [1, 1, 0], close: [0.9, 0.8, 0.1] },
  { model: "model-b", answers: ["2", "5", "8"], exact: [1, 0, 0], close: [0.7, 0.95, 0.2] },
];

describe("web UI: evaluations and annotation queues", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  const browser = browserSession();
  let page: Page;
  const runs: string[] = [];
  let queueId = "";
  const url = (path: string) => `${service.url}/ui${path}`;
  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });

  beforeAll(async () => {
    service = await startTestService();
    const v2 = v2Client(service.url, PROJECT);
    const dataset = await v2.post<{ digest: string }>("/datasets", { name: "sums", rows: QUESTIONS });
    const exact = await v2.post<{ scorer: string }>("/scorers", { name: "exact", op_source_code: "def score(): ..." });
    const close = await v2.post<{ scorer: string }>("/scorers", { name: "close", op_source_code: "def score(): ..." });
    const evaluation = await v2.post<{ evaluation_ref: string }>("/evaluations", { name: "sums-eval", dataset: `weave:///${PROJECT}/object/sums:${dataset.digest}`, scorers: [exact.scorer, close.scorer] });
    for (const plan of PLAN) {
      const model = await v2.post<{ model_ref: string }>("/models", { name: plan.model, source_code: "..." });
      const { evaluation_run_id: run } = await v2.post<{ evaluation_run_id: string }>("/evaluation_runs", { evaluation: evaluation.evaluation_ref, model: model.model_ref });
      for (const [i, question] of QUESTIONS.entries()) {
        const { prediction_id: id } = await v2.post<{ prediction_id: string }>("/predictions", { model: model.model_ref, inputs: question, output: plan.answers[i], evaluation_run_id: run });
        await v2.post("/scores", { prediction_id: id, scorer: exact.scorer, value: plan.exact[i], evaluation_run_id: run });
        await v2.post("/scores", { prediction_id: id, scorer: close.scorer, value: plan.close[i], evaluation_run_id: run });
        await v2.post(`/predictions/${id}/finish`, {});
      }
      await v2.post(`/evaluation_runs/${run}/finish`, {});
      runs.push(run);
    }

    const api = client(service.url, KEY_ACME);
    const t0 = Date.now() - 60_000;
    const calls = [1, 2, 3].map((n) => completeCall(PROJECT, { id: `review-${n}`, trace_id: `rt${n}`, op_name: "answer", inputs: { prompt: `review prompt ${n}` }, output: `review answer ${n}` }, t0, n * 1000, 200));
    await api.json(`/v2/${PROJECT}/calls/complete`, { batch: calls });
    queueId = (await api.json<{ id: string }>("/annotation_queues", { project_id: PROJECT, name: "answers to review", description: "check each answer", scorer_refs: [exact.scorer] })).id;
    await api.json(`/annotation_queues/${queueId}/items`, { project_id: PROJECT, call_ids: calls.map((c) => c.id), display_fields: ["inputs.prompt", "output"] });

    page = browser.page;
    await page.goto(url("/"));
    await page.getByLabel("API key").fill(KEY_ACME);
    await page.getByRole("button", { name: "Log in" }).click();
    await page.getByRole("link", { name: PROJECT }).waitFor();
  });

  afterAll(async () => {
    await service?.stop();
  });

  it("lists the evaluation runs with their scores and compares two row by row, sorted by a score", async () => {
    await page.goto(url(`/${PROJECT}/traces`));
    await page.getByRole("link", { name: "Evaluations" }).click();
    await page.waitForURL(url(`/${PROJECT}/evaluations`));
    const runRows = page.locator("table[aria-label='Evaluation runs'] tbody tr");
    await poll(() => runRows.count()).toBe(2);
    // Newest first: model-b's run, then model-a's; each with its scorers' means.
    expect(await runRows.locator("td:nth-child(3)").allTextContents()).toEqual(["model-b", "model-a"]);
    const header = await page.locator("table[aria-label='Evaluation runs'] th").allTextContents();
    expect(header).toEqual(expect.arrayContaining(["exact.mean", "close.mean"]));
    const exactColumn = header.indexOf("exact.mean") + 1;
    expect(await runRows.locator(`td:nth-child(${exactColumn})`).allTextContents()).toEqual(["0.333", "0.667"]);
    await shot("evaluations");

    for (const run of [...runs].reverse()) await page.getByLabel(`select ${run}`).check();
    await page.getByRole("button", { name: /Compare 2 selected/ }).click();
    await page.waitForURL((u) => u.pathname.endsWith("/evaluations/compare"));
    const summary = page.locator("table[aria-label='Evaluation summaries'] tbody tr");
    await poll(() => summary.count()).toBe(2);
    expect(await summary.locator("td:nth-child(3)").allTextContents()).toEqual(["model-b", "model-a"]);
    expect(await summary.locator("td:nth-child(4)").allTextContents()).toEqual(["3", "3"]);

    const rows = page.locator("table[aria-label='Compared rows'] tbody tr");
    await poll(() => rows.count()).toBe(3);
    // Differences: the outputs of rows 2 and 3 and their scores are marked; row 1 has equal exact scores.
    const rowOf = (q: string) => rows.filter({ has: page.locator(".compare-input", { hasText: q }) });
    expect(await rowOf("1+1").locator("td.compare-output.diff").count()).toBe(0);
    expect(await rowOf("2+2").locator("td.compare-output.diff").count()).toBe(2);
    expect(await rowOf("2+2").locator("td.score.best").allTextContents()).toEqual(["1", "0.95"]);
    expect(await rowOf("2+2").locator("td.compare-output").allTextContents()).toEqual(['"5"', '"4"']);

    // Sorted by model-b's (A's) close score, descending, then ascending.
    const inputs = () => rows.locator(".compare-input").allTextContents();
    await page.getByTitle(/sort by close of A/).click();
    await poll(async () => (await inputs()).map((t) => /\d\+\d/.exec(t)?.[0])).toEqual(["2+2", "1+1", "3+3"]);
    await page.getByTitle(/sort by close of A/).click();
    await poll(async () => (await inputs()).map((t) => /\d\+\d/.exec(t)?.[0])).toEqual(["3+3", "1+1", "2+2"]);
    await shot("evaluations-compare");

    // A run that does not exist is named in the page (the endpoint's warning); the other still shows.
    await page.goto(url(`/${PROJECT}/evaluations/compare?ids=${runs[0]},no-such-run`));
    await poll(() => page.locator(".warning").allTextContents()).toEqual(["evaluation call no-such-run not found"]);
    expect(await summary.locator("td:nth-child(3)").allTextContents()).toEqual(["model-a"]);
  });

  it("goes through an annotation queue: scores and completes one item, skips the next, with progress shown", async () => {
    await page.getByRole("link", { name: "Annotation queues" }).click();
    await page.waitForURL(url(`/${PROJECT}/annotation_queues`));
    const listRow = page.locator("table[aria-label='Annotation queues'] tbody tr");
    await poll(() => listRow.textContent()).toContain("0 of 3");
    await page.getByRole("link", { name: "answers to review" }).click();
    await page.waitForURL(url(`/${PROJECT}/annotation_queues/${queueId}`));
    const progress = page.getByTestId("queue-progress");
    await poll(() => progress.textContent()).toBe("0 of 3 done (0 completed, 0 skipped)");
    const field = (path: string) => page.locator(`.queue-item .display-field[data-field='${path}']`);
    await poll(() => field("inputs.prompt").textContent()).toContain("review prompt 1");
    expect(await field("output").textContent()).toContain("review answer 1");

    await page.getByLabel("Score exact").fill("1");
    await page.getByRole("button", { name: "Save score" }).click();
    await poll(() => page.locator(".queue-item .feedback").textContent()).toContain("exact: 1");
    await page.getByRole("button", { name: "👍" }).click();
    await poll(() => page.locator(".queue-item .feedback").textContent()).toContain("👍");
    await page.getByRole("button", { name: "Mark completed" }).click();
    await poll(() => progress.textContent()).toBe("1 of 3 done (1 completed, 0 skipped)");
    await poll(() => field("inputs.prompt").textContent()).toContain("review prompt 2");
    await page.getByRole("button", { name: "Skip" }).click();
    await poll(() => progress.textContent()).toBe("2 of 3 done (1 completed, 1 skipped)");
    await poll(() => field("inputs.prompt").textContent()).toContain("review prompt 3");
    expect(await page.locator(".queue-items .chip").allTextContents()).toEqual(["completed", "skipped", "unstarted"]);
    await shot("annotation-queue");

    // What the API holds: the key user's states, and the score as feedback naming the queue and scorer.
    const api = client(service.url, KEY_ACME);
    const items = await api.json<{ items: { call_id: string; annotation_state: string }[] }>(`/annotation_queues/${queueId}/items/query`, { project_id: PROJECT });
    expect(items.items.map((it) => [it.call_id, it.annotation_state])).toEqual([["review-1", "completed"], ["review-2", "skipped"], ["review-3", "unstarted"]]);
    const feedback = await api.json<{ result: { feedback_type: string; payload: Record<string, unknown>; queue_id: string | null; annotation_ref: string | null }[] }>("/feedback/query", {
      project_id: PROJECT,
      query: { $expr: { $eq: [{ $getField: "weave_ref" }, { $literal: `weave:///${PROJECT}/call/review-1` }] } },
      sort_by: [{ field: "created_at", direction: "asc" }],
    });
    expect(feedback.result.map((f) => [f.feedback_type, f.queue_id, f.annotation_ref?.includes("/object/exact") ?? null])).toEqual([
      ["wandb.annotation.exact", queueId, true],
      ["wandb.reaction.1", queueId, null],
    ]);
    expect(feedback.result[0]!.payload).toEqual({ value: 1 });

    await page.getByRole("link", { name: "all queues" }).click();
    await poll(() => listRow.textContent()).toContain("2 of 3");
  });
});
