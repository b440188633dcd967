import { execFileSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Where the browser tests and the UI benchmark write their screenshots (git-ignored). */
export const SCREENSHOTS = join(ROOT, "test-output", "ui");

/** Builds the web UI when its build is missing or older than its sources (the script install.sh runs). */
export function buildUi(): void {
  execFileSync("bash", [join(ROOT, "scripts", "build-ui.sh")], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  mkdirSync(SCREENSHOTS, { recursive: true });
}

/** Debian's chromium, headless (no browser download is possible on these machines). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}

/** A page of the size the screenshots are taken at, printing the page's own errors. */
export async function openPage(browser: Browser): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(20_000);
  page.on("pageerror", (err) => console.error(`page error: ${err.message}`));
  return page;
}

/**
 * A browser page for the calling test file: the UI built (when stale) and Chromium launched
 * before the file's own `beforeAll` (registered first, it runs first), closed after its tests.
 */
export function browserSession(): { readonly page: Page } {
  let browser: Browser | null = null;
  let page: Page | null = null;
  beforeAll(async () => {
    buildUi();
    browser = await launchChromium();
    page = await openPage(browser);
  }, 120_000);
  afterAll(async () => browser?.close());
  return {
    get page(): Page {
      if (page === null) throw new Error("the browser is not started yet (use it inside tests or hooks)");
      return page;
    },
  };
}

/** Logs `page` in to the UI of the service at `serviceUrl` with `key`, as a user does, and waits for the projects. */
export async function logIn(page: Page, serviceUrl: string, key: string): Promise<void> {
  await page.goto(`${serviceUrl}/ui/login`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Log in" }).click();
  await page.getByRole("heading", { name: "Projects" }).waitFor();
}

const iso = (ms: number): string => new Date(ms).toISOString();

export interface CompleteCall {
  project_id: string;
  id: string;
  trace_id: string;
  op_name: string;
  started_at: string;
  ended_at: string;
  attributes: Record<string, unknown>;
  inputs: Record<string, unknown>;
  output?: unknown;
  summary?: Record<string, unknown>;
  parent_id?: string | null;
  thread_id?: string | null;
  turn_id?: string | null;
  exception?: string | null;
}

/** A finished call for `/v2/{entity}/{project}/calls/complete`, `ms` after `t0`, lasting `durationMs`. */
export function completeCall(projectId: string, fields: Partial<CompleteCall> & { id: string; trace_id: string; op_name: string }, t0: number, ms: number, durationMs: number): CompleteCall {
  return { project_id: projectId, attributes: {}, inputs: {}, started_at: iso(t0 + ms), ended_at: iso(t0 + ms + durationMs), ...fields };
}

/**
 * A trace of `count` calls: a root, `fanout` children per call breadth-first, each child
 * starting a little after its parent and inside it.
 */
export function bigTrace(projectId: string, traceId: string, count: number, t0: number, fanout = 10): CompleteCall[] {
  const calls: CompleteCall[] = [];
  for (let i = 0; i < count; i++) {
    const parent = i === 0 ? null : Math.floor((i - 1) / fanout);
    calls.push(completeCall(projectId, { id: `${traceId}-${i}`, trace_id: traceId, op_name: i === 0 ? "big_root" : `step_${i % 7}`, parent_id: parent === null ? null : `${traceId}-${parent}`, inputs: { i } }, t0, i, count - i + 5));
  }
  return calls;
}
