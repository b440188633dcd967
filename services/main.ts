import cluster from "node:cluster";
import pino from "pino";
import { reportReady, startCluster } from "./cluster.js";
import { loadConfig } from "./config.js";
import { startService } from "./service.js";

/**
 * Entry point: reads the configuration, starts the roles (or, with PROCESSES > 1, the
 * cluster that runs them), stops cleanly on SIGINT/SIGTERM.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const log = pino({ level: config.LOG_LEVEL });
  const service = config.PROCESSES > 1 && cluster.isPrimary ? await startCluster(config, log) : await startService(config, log);
  reportReady(service.url);
  if (service.apiKey && cluster.isPrimary) {
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
  // A cluster process whose primary is gone drains and exits rather than linger.
  if (cluster.isWorker) process.on("disconnect", () => stop("primary gone"));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
