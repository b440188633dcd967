import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { KEY_ACME } from "../support/service.js";

const here = dirname(fileURLToPath(import.meta.url));
const tsxCli = join(here, "../../node_modules/tsx/dist/cli.mjs");

/** A scenario script's exit and output; `result` is the JSON it printed on its last stdout line. */
export interface SdkRun<T> {
  code: number | null;
  stdout: string;
  stderr: string;
  result: T;
}

/**
 * Runs test/weaveSdk/scripts/<scenario>.ts in its own process: the SDK keeps a global client, so each
 * scenario gets a fresh one. Everything the SDK could reach is the service: the trace server URL, the W&B
 * base URL (GraphQL), and a private HOME so no user's netrc or wandb settings are read. The working
 * directory is a fresh temporary one because the SDK appends failures to ./weaveErrors.log.
 */
export interface SdkRunOptions {
  /** Added to the environment; `undefined` removes a variable (e.g. WANDB_API_KEY). */
  env?: Record<string, string | undefined>;
  /** HOME and working directory; a fresh one when absent. */
  home?: string;
  timeoutMs?: number;
}

export function runSdk<T>(scenario: string, serviceUrl: string, project: string, options: SdkRunOptions = {}): Promise<SdkRun<T>> {
  const home = options.home ?? mkdtempSync(join(tmpdir(), "weave-sdk-"));
  const timeoutMs = options.timeoutMs ?? 45_000;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    WF_TRACE_SERVER_URL: serviceUrl,
    WANDB_BASE_URL: serviceUrl,
    WANDB_API_KEY: KEY_ACME,
    WEAVE_PRINT_CALL_LINK: "false",
    WEAVE_PROJECT: project,
    ...options.env,
  };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsxCli, join(here, "scripts", `${scenario}.ts`)], { cwd: home, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      const last = stdout.trim().split("\n").at(-1) ?? "";
      let result: T;
      try {
        result = JSON.parse(last) as T;
      } catch {
        reject(new Error(`scenario ${scenario} exited ${code} without a JSON result\nstdout:\n${stdout}\nstderr:\n${stderr}`));
        return;
      }
      resolve({ code, stdout, stderr, result });
    });
  });
}
