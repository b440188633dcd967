import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { client, KEY_ACME, serviceForFile } from "../support/service.js";
import { runSdk } from "./runSdk.js";
import { byOpName, sdkProject } from "./support.js";

/** The unmodified SDK's weave.login (scripts/login.ts), then a session that has only the key login saved (scripts/afterLogin.ts). */
const P = "acme/sdk-login";
const service = serviceForFile();

describe("the Weave TypeScript SDK: weave.login", () => {
  it("checks the service's health, saves the key in ~/.netrc for the service's host, and a later weave.init traces with it", async () => {
    const home = mkdtempSync(join(tmpdir(), "weave-sdk-login-"));
    const host = new URL(service.url).host;
    const login = await runSdk("login", service.url, P, { home, env: { WANDB_API_KEY: undefined, SDK_LOGIN_KEY: KEY_ACME } });
    expect(login.code, login.stderr).toBe(0);
    expect(login.result).toEqual({ loggedIn: true });
    expect(readFileSync(join(home, ".netrc"), "utf8")).toContain(`machine ${host}`);
    expect(readFileSync(join(home, ".netrc"), "utf8")).toContain(`password ${KEY_ACME}`);

    const session = await runSdk("afterLogin", service.url, P, { home, env: { WANDB_API_KEY: undefined } });
    expect(session.code, session.stderr).toBe(0);
    expect(session.stderr).toBe("");
    expect(session.result).toEqual({ greeting: "hello netrc" });
    const [greet] = byOpName(await sdkProject(client(service.url), P).calls(), "greet");
    expect(greet).toMatchObject({ inputs: { arg0: "netrc" }, output: "hello netrc", wb_user_id: "alice" });
  });
});
