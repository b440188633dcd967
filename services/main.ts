import cluster from "node:cluster";
import { setFlagsFromString } from "node:v8";
import { reportReady, startCluster } from "./cluster.js";
import { loadConfig } from "./config.js";
import { stdoutLogger } from "./stdoutLog.js";
import { startService } from "./service.js";
import { errorText } from "./errors.js";

/**
 * Entry point: reads the configuration, starts the roles (or, with PROCESSES > 1, the
 * cluster that runs them), stops cleanly on SIGINT/SIGTERM.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  // Read by V8 at each full collection, in every thread's heap (worker threads included).
  if (config.HEAP_GROWING_PERCENT > 0) setFlagsFromString(`--heap-growing-percent=${config.HEAP_GROWING_PERCENT}`);
  const log = stdoutLogger(config.LOG_LEVEL);
  const starting = config.PROCESSES > 1 && cluster.isPrimary ? startCluster(config, log) : startService(config, log);
  // Signals are handled from the first moment: a stop asked for while the service (or a
  // cluster's later processes) is still starting waits for the start, then drains.
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, "stopping: intake closed, draining");
    starting
      .then((service) => service.stop())
      .then(
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

  const service = await starting;
  reportReady(service.url);
  if (service.apiKey && cluster.isPrimary) {
    process.stdout.write(`\nLocal API key (HTTP Basic, username "api"): ${service.apiKey}\n`);
    process.stdout.write(`Point the Weave SDK at ${service.url} with WF_TRACE_SERVER_URL and this key.\n`);
    const grpc = service.otlpGrpcUrl ? ` or OTLP/gRPC at ${service.otlpGrpcUrl}` : "";
    process.stdout.write(`OpenTelemetry exporters: OTLP/HTTP at ${service.url}/otel/v1/traces${grpc} (docs/clients.md).\n\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${errorText(err)}\n`);
  process.exit(1);
});
