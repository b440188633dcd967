import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { basic, client, KEY_ACME, startTestService, waitStored } from "../support/service.js";
import { browserSession, completeCall, logIn, SCREENSHOTS } from "./browser.js";

/**
 * The web UI's settings pages in Debian's chromium, for an admin of the entity (the AUTH_KEYS
 * key of `acme`): a project's retention set and cleared, its storage shown; an API key made,
 * shown once, listed, used, and revoked after a confirmation. A viewer key made there sees no
 * settings link, and the pages tell it they are for admins. What the pages did is read back
 * through the API. Run on the ClickHouse 18.16 project only.
 */
const PROJECT_NAME = `uiset${randomBytes(4).toString("hex")}`;
const PROJECT = `acme/${PROJECT_NAME}`;
const KEY_NAME = `dashboard-${randomBytes(3).toString("hex")}`;
const poll = <T>(fn: () => T | Promise<T>) => expect.poll(fn, { timeout: 20_000, interval: 100 });

describe("web UI: project and entity settings", () => {
  let service: Awaited<ReturnType<typeof startTestService>>;
  const browser = browserSession();
  let page: Page;
  let viewerKey = "";
  const url = (path: string) => `${service.url}/ui${path}`;
  const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false });
  const read = async <T>(path: string): Promise<T> => (await client(service.url, KEY_ACME).get(path)).json() as Promise<T>;
  const status = async (path: string, key: string) => (await fetch(`${service.url}${path}`, { headers: { authorization: basic(key) } })).status;
  const logInAs = (key: string) => logIn(page, service.url, key);
  const logOut = () => page.getByRole("button", { name: "Log out" }).click();

  beforeAll(async () => {
    service = await startTestService();
    const t0 = Date.now() - 60_000;
    await client(service.url, KEY_ACME).json(`/v2/${PROJECT}/calls/complete`, {
      batch: [completeCall(PROJECT, { id: "kept-1", trace_id: "k1", op_name: "answer", inputs: { q: "something to store" }, output: "stored" }, t0, 0, 100)],
    });
    await waitStored(service.url);
    page = browser.page;
  });

  afterAll(async () => {
    await service?.stop();
  });

  it("shows an admin the project's settings: retention set, shown and cleared, and the storage used", async () => {
    await logInAs(KEY_ACME);
    await page.getByRole("link", { name: PROJECT }).click();
    await page.getByRole("link", { name: "Settings" }).click();
    await page.waitForURL(url(`/${PROJECT}/settings`));
    await poll(() => page.locator(".retention-effective").textContent()).toContain("Everything is kept");
    await poll(() => page.locator(".storage-used").textContent()).toMatch(/^\d+(\.\d)? (B|KiB|MiB|GiB)$/);

    await page.getByLabel("Retention in days").fill("30");
    await page.getByRole("button", { name: "Save" }).click();
    await poll(() => page.locator(".retention-effective").textContent()).toBe("Calls are kept 30 days (this project's setting).");
    const settingsPath = `/projects/${PROJECT}/settings`;
    expect(await read(settingsPath)).toMatchObject({ retention_days: 30, effective_retention_days: 30 });
    await shot("settings-project");

    await page.getByRole("button", { name: "Use the server's default" }).click();
    await poll(() => page.locator(".retention-effective").textContent()).toContain("Everything is kept");
    expect(await read(settingsPath)).toMatchObject({ retention_days: null, effective_retention_days: null });
  });

  it("makes a viewer key, shows its secret once, lists it, and the key works", async () => {
    await page.getByRole("link", { name: "API keys of acme" }).click();
    await page.waitForURL(url("/acme/settings"));
    await page.getByLabel("Name").fill(KEY_NAME);
    await page.getByLabel("Role").selectOption("viewer");
    await page.getByRole("button", { name: "Make key" }).click();
    await poll(() => page.getByRole("status").textContent()).toContain("shown only this once");
    viewerKey = (await page.locator(".new-key-secret").textContent()) ?? "";
    expect(viewerKey.length).toBeGreaterThanOrEqual(16);
    const row = page.locator("table.api-keys tr", { hasText: KEY_NAME });
    await poll(() => row.locator("td").allTextContents()).toEqual([KEY_NAME, "viewer", expect.any(String), "never", "Revoke"]);
    await shot("settings-keys-new");
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.locator(".new-key-secret").count()).toBe(0);
    // The secret is not shown again: a reload lists the key by name only.
    await page.reload();
    await poll(() => row.count()).toBe(1);
    expect(await page.content()).not.toContain(viewerKey);
    await poll(() => status("/projects", viewerKey)).toBe(200);
  });

  it("shows a viewer no settings link, and tells it the settings are for admins", async () => {
    await logOut();
    await logInAs(viewerKey);
    await poll(() => page.getByRole("link", { name: PROJECT }).count()).toBe(1);
    expect(await page.getByRole("link", { name: "acme: API keys" }).count()).toBe(0);
    await page.getByRole("link", { name: PROJECT }).click();
    await page.waitForURL(url(`/${PROJECT}/traces`));
    await poll(() => page.locator(".grid-row").count()).toBe(1);
    expect(await page.locator(".topbar nav").getByRole("link", { name: "Settings" }).count()).toBe(0);
    await page.goto(url(`/${PROJECT}/settings`));
    await poll(() => page.locator(".admins-only").textContent()).toContain("admins only");
    await shot("settings-viewer");
    await page.goto(url("/acme/settings"));
    await poll(() => page.locator(".admins-only").textContent()).toContain("admins only");
    expect(await page.locator("table.api-keys").count()).toBe(0);
  });

  it("revokes the key after a confirmation: it leaves the list and is refused", async () => {
    await logOut();
    await logInAs(KEY_ACME);
    await page.goto(url("/acme/settings"));
    const row = page.locator("table.api-keys tr", { hasText: KEY_NAME });
    await row.getByRole("button", { name: "Revoke" }).click();
    await poll(() => row.textContent()).toContain(`Revoke ${KEY_NAME}?`);
    // Cancel first: nothing is revoked.
    await row.getByRole("button", { name: "Cancel" }).click();
    expect(await status("/projects", viewerKey)).toBe(200);
    await row.getByRole("button", { name: "Revoke" }).click();
    await shot("settings-keys-revoke");
    await row.getByRole("button", { name: "Yes, revoke" }).click();
    await poll(() => row.count()).toBe(0);
    const listed = await read<{ keys: { name: string }[] }>("/admin/keys?entity=acme");
    expect(listed.keys.map((k) => k.name)).not.toContain(KEY_NAME);
    await poll(() => status("/projects", viewerKey)).toBe(401);
  });
});
