import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createJudge } from "../evaluations/support.js";
import { client, KEY_ACME, startTestService } from "../support/service.js";
import { browserSession, logIn, SCREENSHOTS } from "./browser.js";

/**
 * The web UI's Monitors page in Debian's chromium: a monitor made with the form from the
 * project's judge scorer is the Monitor object the Weave SDK publishes, listed with its status;
 * "Deactivate" publishes a new version with `active: false`; a monitor's score (feedback with
 * `trigger_ref`, written here through the API as the worker writes it: the scoring itself is
 * test/monitors') is counted on the page and shown with the call. What the page did is read
 * back through the API. Run on the ClickHouse 18.16 project only.
 */
const PROJECT = `acme/uimonitors${randomBytes(4).toString("hex")}`;
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 30_000, interval: 200 });

interface MonitorObj {
  object_id: string;
  digest: string;
  version_index: number;
  val: Record<string, unknown>;
}

describe("web UI: monitors", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  const browser = browserSession();
  let page: Page;
  let judge: string;
  const api = () => client(service.url, KEY_ACME);
  const versions = async () =>
    (await api().json<{ objs: MonitorObj[] }>("/objs/query", { project_id: PROJECT, filter: { object_ids: ["quality"] }, sort_by: [{ field: "created_at", direction: "asc" }] })).objs;

  beforeAll(async () => {
    service = await startTestService();
    judge = await createJudge(api(), PROJECT);
    page = browser.page;
    await logIn(page, service.url, KEY_ACME);
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
  });

  it("makes a monitor from a judge scorer, deactivates it, and shows its score with the call", async () => {
    await page.goto(`${service.url}/ui/${PROJECT}/monitors`);
    await page.getByRole("heading", { name: `Monitors of ${PROJECT}` }).waitFor();
    await page.getByText("No monitors yet.").waitFor();
    await page.getByLabel("Name", { exact: true }).fill("quality");
    await page.getByLabel("Ops (comma-separated; empty: every op)").fill("answer");
    await page.getByLabel("Sampling rate (0–1)").fill("0.5");
    await page.getByRole("checkbox", { name: "judge" }).check();
    await page.getByRole("button", { name: "Create monitor" }).click();
    await poll(() => page.locator(".monitor-row").count()).toBe(1);

    const [created] = await versions();
    expect(created!.val).toMatchObject({
      _class_name: "Monitor", _bases: ["Object", "BaseModel"], name: "quality", sampling_rate: 0.5, scorers: [judge],
      call_filter: { op_names: [`weave:///${PROJECT}/op/answer:*`] }, active: true,
    });
    const createdRef = `weave:///${PROJECT}/object/quality:${created!.digest}`;
    expect(await api().json("/monitors/status", { project_id: PROJECT, monitor_ref: createdRef })).toMatchObject({ active: true, scored: 0, unsupported_scorers: [], filter_error: null });
    const row = page.locator(".monitor-row");
    await poll(() => row.textContent()).toMatch(/quality.*answer.*0\.5.*judge.*active.*0/);

    await page.getByRole("button", { name: "Deactivate quality" }).click();
    await poll(() => row.locator(".badge").textContent()).toBe("inactive");
    const after = await versions();
    expect(after.map((v) => v.val.active)).toEqual([true, false]);
    expect(after[1]!.val).toMatchObject({ name: "quality", sampling_rate: 0.5, scorers: [judge] });
    await page.getByRole("button", { name: "Activate quality" }).waitFor();

    // A call, and the score the worker would have written for it while the first version was active.
    const now = Date.now();
    await api().json("/call/upsert_batch", {
      batch: [
        { mode: "start", req: { start: { project_id: PROJECT, id: "scored-call", op_name: `weave:///${PROJECT}/op/answer:0123abcd`, trace_id: "t1", started_at: new Date(now - 10).toISOString(), attributes: {}, inputs: { question: "1+1=" } } } },
        { mode: "end", req: { end: { project_id: PROJECT, id: "scored-call", ended_at: new Date(now).toISOString(), output: "2", summary: {} } } },
      ],
    });
    await api().json("/feedback/create", {
      project_id: PROJECT, weave_ref: `weave:///${PROJECT}/call/scored-call`, feedback_type: "wandb.runnable.judge",
      payload: { output: { score: 4, reason: "right" } }, runnable_ref: judge, trigger_ref: createdRef,
    });
    await poll(async () => {
      await page.locator(".monitor-score-count").getByRole("button", { name: "Refresh" }).click();
      return page.locator(".monitor-score-count").textContent();
    }).toContain("1 scores over 2 versions");
    await page.locator(".monitors-page .chart canvas").first().waitFor();
    expect(await page.locator(".monitor-recent").textContent()).toContain("scored-call");
    await page.screenshot({ path: join(SCREENSHOTS, "monitors.png"), fullPage: true });

    await page.locator(".monitor-recent").getByRole("link", { name: "scored-call" }).click();
    const score = page.locator(".monitor-score");
    await score.waitFor();
    expect(await score.textContent()).toMatch(/quality.*judge.*score.*4.*right/);
    // Shown in its own section only: the call's Feedback list leaves the monitors' scores out.
    await page.locator("ul.feedback").getByText("none yet").waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "monitor-score-on-call.png"), fullPage: false });
  }, 120_000);
});
