import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startReceiver } from "../alerts/webhookReceiver.js";
import { client, KEY_ACME, startTestService } from "../support/service.js";
import { browserSession, logIn, SCREENSHOTS } from "./browser.js";

/**
 * The web UI's Alerts page in Debian's chromium, for an admin of the entity: a rule made with
 * the form, listed in state ok; failing calls ingested through the API turn it to firing on
 * the page (its webhook, a receiver on 127.0.0.1, posted once); the rule deleted from the page.
 * What the page did is read back through the API. Run on the ClickHouse 18.16 project only.
 */
const PROJECT = `acme/uialerts${randomBytes(4).toString("hex")}`;
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 30_000, interval: 200 });

describe("web UI: alerts", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const browser = browserSession();
  let page: Page;
  const api = () => client(service.url, KEY_ACME);
  const rules = async () => (await api().json<{ alerts: { id: string; name: string; state: string }[] }>("/alerts/query", { project_id: PROJECT })).alerts;

  beforeAll(async () => {
    receiver = await startReceiver();
    service = await startTestService({ ALERTS_ALLOWED_HOSTS: "127.0.0.1", ALERTS_EVAL_INTERVAL_MS: "300" });
    page = browser.page;
    await logIn(page, service.url, KEY_ACME);
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await receiver?.close();
  });

  it("makes a rule with the form, shows it firing once failing calls come, and deletes it", async () => {
    await page.goto(`${service.url}/ui/${PROJECT}/alerts`);
    await page.getByRole("heading", { name: `Alerts of ${PROJECT}` }).waitFor();
    await page.getByText("No alert rules yet.").waitFor();
    await page.getByLabel("Name").fill("errors");
    await page.getByLabel("Metric").selectOption("error_rate");
    await page.getByLabel("Comparison").selectOption("gt");
    await page.getByLabel("Threshold").fill("0.5");
    await page.getByLabel("Window in minutes").fill("5");
    await page.getByLabel("Webhook URL").fill(`${receiver.url}/ui-errors`);
    await page.getByRole("button", { name: "Create rule" }).click();
    await poll(() => page.locator(".alert-rule").count()).toBe(1);
    expect(await rules()).toMatchObject([{ name: "errors", state: "ok" }]);
    expect(await page.locator(".alert-rule").textContent()).toContain("Error rate (0–1) > 0.5 over 5 min");

    const now = Date.now();
    const batch = [0, 1, 2].flatMap((i) => [
      { mode: "start", req: { start: { project_id: PROJECT, id: `fail-${i}`, op_name: "op", trace_id: `t${i}`, started_at: new Date(now - 10).toISOString(), attributes: {}, inputs: {} } } },
      { mode: "end", req: { end: { project_id: PROJECT, id: `fail-${i}`, ended_at: new Date(now).toISOString(), exception: "boom", summary: {} } } },
    ]);
    await api().json("/call/upsert_batch", { batch });
    await poll(async () => {
      await page.getByRole("button", { name: "Refresh" }).click();
      return page.locator(".alert-rule .badge").textContent();
    }).toBe("firing");
    expect(await page.locator(".alert-rule").textContent()).toContain("firing at");
    await poll(() => receiver.ok("/ui-errors").length).toBe(1);
    await page.screenshot({ path: join(SCREENSHOTS, "alerts.png"), fullPage: false });

    await page.getByRole("button", { name: "Delete errors" }).click();
    await page.getByText("No alert rules yet.").waitFor();
    expect(await rules()).toEqual([]);
  });
});
