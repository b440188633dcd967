/**
 * OTLP/gRPC: `opentelemetry.proto.collector.trace.v1.TraceService/Export` and
 * `...logs.v1.LogsService/Export` on a port of their own (`OTLP_GRPC_PORT`), plaintext HTTP/2,
 * on @grpc/grpc-js. A second door into the room of OTLP/HTTP (routes.ts): the message's bytes
 * are passed through as they arrived (identity serializers, no proto loader), then take the
 * same path as an OTLP/HTTP protobuf body (export.ts): one decode, one check of the spans, one
 * publish, answered once durable.
 *
 * What differs is the transport's:
 * - the key in the `authorization` metadata (`Basic base64(api:<key>)` or `Bearer <key>`),
 *   the project in `project_id` (else a Basic user name `<entity>/<project>`), checked as the
 *   HTTP operations check them (http/app.ts): the writer role, then the project's reach;
 * - every refusal as a gRPC status: the code of the HTTP answer the same error gets
 *   (export.ts `otlpStatus`): UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT (an
 *   undecodable message, no project), RESOURCE_EXHAUSTED (queue full, lag bound) or
 *   UNAVAILABLE (not durable, draining), those two with a `google.rpc.RetryInfo` in
 *   `grpc-status-details-bin` (and `grpc-retry-pushback-ms`, for gRPC's own retry policies);
 * - the limits: `OTLP_MAX_BODY_BYTES` is the largest message, received and after gzip
 *   (grpc-js refuses a larger one with RESOURCE_EXHAUSTED, which exporters do not retry
 *   without RetryInfo); gzip (`grpc-encoding`) is undone by grpc-js.
 *
 * Stopping (`stop`): intake ends (no new connections; GOAWAY on the open ones, so new calls
 * go elsewhere), the calls in flight are answered, and after the grace period the rest are cut.
 */
import { Metadata, Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall, type ServiceDefinition, type UntypedServiceImplementation } from "@grpc/grpc-js";
import type { Logger } from "pino";
import { holdsAnywhere, type KeyRing, type Principal } from "../../auth/keys.js";
import { credentials } from "../../contract/credentials.js";
import type { RequestHeaders } from "../../contract/operation.js";
import { grpcProject, otlpLogsOp, otlpTracesOp, PROJECT_HEADER } from "../../contract/otlp.js";
import { ForbiddenError, RetryableError, UnauthorizedError } from "../../errors.js";
import { checkReach, errorAnswer } from "../../http/app.js";
import type { Role } from "../../keyRoles.js";
import { grpcDuration, grpcRequests } from "../../metrics.js";
import { encodeExportResponse, encodeLogsExportResponse, encodeStatusDetails } from "../../otlp/decode.js";
import { grpcMethodPath, LogsService, TraceService } from "../../otlp/protobuf.js";
import type { TraceEvent } from "../../queue/events.js";
import type { EventPublisher } from "../../queue/queue.js";
import { exportLogs, exportTraces, otlpStatus, type OtlpLimits } from "./export.js";

export const TRACES_EXPORT_PATH = grpcMethodPath(TraceService, "Export");
export const LOGS_EXPORT_PATH = grpcMethodPath(LogsService, "Export");

export interface OtlpGrpcOptions {
  readonly publisher: EventPublisher<TraceEvent>;
  readonly keys: KeyRing;
  readonly log: Logger;
  readonly limits: OtlpLimits;
  readonly host: string;
  /** A port to listen on (1–65535; the service never starts this server for 0, "off"). */
  readonly port: number;
  /** How long `stop` lets the calls in flight finish before it cuts them. */
  readonly shutdownGraceMs: number;
}

export interface OtlpGrpcServer {
  /** The port it listens on. */
  readonly port: number;
  /** Stop intake, let the calls in flight be answered (up to the grace period), close. */
  stop(): Promise<void>;
}

/** Who called and for which project, checked as HttpApi.mount checks an operation's key and scope. */
interface Admitted {
  readonly principal: Principal;
  readonly projectId: string;
}

type ExportOne = (request: Buffer, admitted: Admitted) => Promise<Buffer>;

const identity = (bytes: Buffer): Buffer => bytes;

/** A unary method whose request and answer are the message's bytes as they are. */
const bytesMethod = (path: string) => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});

/** The metadata the project rules and the key read, as the HTTP headers they stand for. */
function headersOf(metadata: Metadata): RequestHeaders {
  const headers: Record<string, string> = {};
  for (const name of ["authorization", PROJECT_HEADER]) {
    const value = metadata.get(name)[0];
    if (typeof value === "string") headers[name] = value;
  }
  return headers;
}

function admit(keys: KeyRing, headers: RequestHeaders, role: Role): Admitted {
  const secret = credentials(headers["authorization"] as string | undefined)?.secret;
  const principal = secret === undefined ? null : keys.find(secret);
  if (!principal) throw new UnauthorizedError("missing or invalid API key");
  if (!holdsAnywhere(principal, role)) throw new ForbiddenError(`this operation needs the role ${role}; this key holds it in no entity`);
  const projectId = grpcProject(headers);
  checkReach(principal, projectId, role);
  return { principal, projectId };
}

/** The status of a refused call, with RetryInfo (and gRPC's retry pushback) when the client should come back. */
function refusal(err: unknown): { code: number; details: string; metadata: Metadata } {
  const { code, message, retryAfterSeconds } = otlpStatus(errorAnswer(err), err);
  const metadata = new Metadata();
  if (retryAfterSeconds !== null) {
    metadata.set("grpc-status-details-bin", encodeStatusDetails(code, message, retryAfterSeconds));
    metadata.set("grpc-retry-pushback-ms", String(Math.round(retryAfterSeconds * 1000)));
  }
  return { code, details: message, metadata };
}

export async function startOtlpGrpc(options: OtlpGrpcOptions): Promise<OtlpGrpcServer> {
  const { publisher, keys, log, limits } = options;
  let draining = false;

  const serve = (path: string, role: Role, exportOne: ExportOne) => (call: ServerUnaryCall<Buffer, Buffer>, answer: sendUnaryData<Buffer>) => {
    const started = process.hrtime.bigint();
    const done = (code: number) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      grpcRequests.inc({ method: path, code: String(code) });
      grpcDuration.observe({ method: path }, seconds);
      if (log.isLevelEnabled("info")) log.info({ rpc: path, code: status[code] ?? code, ms: Math.round(seconds * 1e4) / 10 }, "grpc call");
    };
    const run = async () => {
      if (draining) throw new RetryableError("shutting down, retry later", 1);
      return exportOne(call.request, admit(keys, headersOf(call.metadata), role));
    };
    run().then(
      (response) => {
        answer(null, response);
        done(status.OK);
      },
      (err: unknown) => {
        const refused = refusal(err);
        // As HTTP: an expected refusal (draining, buffers full) is a warning; a fault is an error.
        if (err instanceof RetryableError) log.warn({ rpc: path, reason: err.message }, "grpc call refused, client may retry");
        else if (refused.code === status.INTERNAL) log.error({ err, rpc: path }, "grpc call failed");
        answer(refused);
        done(refused.code);
      },
    );
  };

  const exportTraceRequest: ExportOne = async (body, { principal, projectId }) =>
    encodeExportResponse("protobuf", await exportTraces(publisher, { project_id: projectId, wb_user_id: principal.username, format: "protobuf", body, maxSpanBytes: limits.maxSpanBytes }));
  const exportLogsRequest: ExportOne = async (body, { projectId }) => encodeLogsExportResponse("protobuf", await exportLogs(publisher, projectId, "protobuf", body));

  const server = new Server({ "grpc.max_receive_message_length": limits.maxBodyBytes });
  server.addService({ Export: bytesMethod(TRACES_EXPORT_PATH) } as ServiceDefinition, { Export: serve(TRACES_EXPORT_PATH, roleOf(otlpTracesOp), exportTraceRequest) } as UntypedServiceImplementation);
  server.addService({ Export: bytesMethod(LOGS_EXPORT_PATH) } as ServiceDefinition, { Export: serve(LOGS_EXPORT_PATH, roleOf(otlpLogsOp), exportLogsRequest) } as UntypedServiceImplementation);

  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  const port = await new Promise<number>((bound, fail) => {
    server.bindAsync(`${host}:${options.port}`, ServerCredentials.createInsecure(), (err, actual) => {
      if (err) fail(new Error(`OTLP_GRPC_PORT ${options.port}: cannot listen on ${options.host}: ${err.message}`));
      else bound(actual);
    });
  });

  return {
    port,
    stop: async () => {
      draining = true;
      await new Promise<void>((closed) => {
        const cut = setTimeout(() => {
          server.forceShutdown();
          closed();
        }, options.shutdownGraceMs);
        server.tryShutdown(() => {
          clearTimeout(cut);
          closed();
        });
      });
    },
  };
}

function roleOf(op: { readonly role?: Role | null }): Role {
  if (!op.role) throw new Error("an OTLP export operation declares the role it needs");
  return op.role;
}
