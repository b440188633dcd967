import pino from "pino";
import { loadConfig } from "./config.js";
import { startService } from "./service.js";

/** Entry point: reads the configuration, starts the roles, stops cleanly on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.LOG_LEVEL });
  const service = await startService(config, log);
  if (service.apiKey) {
    process.stdout.write(`\nLocal API key (HTTP Basic, username "api"): ${service.apiKey}\n`);
    process.stdout.write(`Point the Weave SDK at ${service.url} with WF_TRACE_SERVER_URL and this key.\n\n`);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping: intake closed, draining");
    service.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, "error while stopping");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
