/**
 * Helpers for the OTLP/gRPC tests: a gRPC client of the two Export methods that sends the
 * message's bytes as they are (as the OpenTelemetry exporters' own client does: identity
 * serializers), optionally with gRPC's retry policy, and the decoding of a refusal's
 * `grpc-status-details-bin` (google.rpc.Status with a RetryInfo).
 */
import { credentials, makeGenericClientConstructor, Metadata, type ChannelOptions, type ServiceError } from "@grpc/grpc-js";
import { LOGS_EXPORT_PATH, TRACES_EXPORT_PATH } from "../../services/ingest/otlp/grpc.js";
import { RetryInfo, RpcStatus } from "../../services/otlp/protobuf.js";
import { basic, KEY_ACME } from "../support/keys.js";

const identity = (bytes: Buffer): Buffer => bytes;
const method = (path: string) => ({ path, requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity });

export type ExportAnswer = { ok: true; response: Buffer; ms: number } | { ok: false; error: ServiceError; ms: number };

export interface ExportClient {
  export(body: Buffer, metadata?: Record<string, string>): Promise<ExportAnswer>;
  close(): void;
}

/** `http://host:port` → `host:port`, the address a gRPC client takes. */
export const grpcAddress = (url: string): string => url.replace(/^https?:\/\//, "");

/** The headers the tests send by default: the acme key, project `project`. */
export const grpcHeaders = (project: string, key: string = KEY_ACME): Record<string, string> => ({ authorization: basic(key), project_id: project });

/**
 * A client of `TraceService/Export` or `LogsService/Export`. `gzip`: messages compressed
 * (`grpc-encoding: gzip`). `retrying`: gRPC's own retry policy (a service config) retrying
 * RESOURCE_EXHAUSTED and UNAVAILABLE, which waits the server's pushback. `ownConnection`: a
 * connection of its own (grpc-js otherwise shares one between the clients of a process).
 */
export function exportClient(url: string, service: "traces" | "logs", options: { gzip?: boolean; retrying?: boolean; ownConnection?: boolean } = {}): ExportClient {
  const path = service === "traces" ? TRACES_EXPORT_PATH : LOGS_EXPORT_PATH;
  const serviceName = path.split("/")[1]!;
  const channelOptions: ChannelOptions = {
    ...(options.gzip ? { "grpc.default_compression_algorithm": 2 } : {}),
    ...(options.ownConnection ? { "grpc.use_local_subchannel_pool": 1 } : {}),
    ...(options.retrying
      ? {
          "grpc.service_config": JSON.stringify({
            methodConfig: [{
              name: [{ service: serviceName }],
              retryPolicy: { maxAttempts: 4, initialBackoff: "0.05s", maxBackoff: "5s", backoffMultiplier: 2, retryableStatusCodes: ["RESOURCE_EXHAUSTED", "UNAVAILABLE"] },
            }],
          }),
        }
      : {}),
  };
  const Client = makeGenericClientConstructor({ Export: method(path) }, serviceName);
  const client = new Client(grpcAddress(url), credentials.createInsecure(), channelOptions);
  return {
    export: (body, headers = {}) => {
      const metadata = new Metadata();
      for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
      const started = Date.now();
      return new Promise<ExportAnswer>((done) => {
        (client as unknown as { Export: (b: Buffer, m: Metadata, o: object, cb: (e: ServiceError | null, r?: Buffer) => void) => void }).Export(
          body,
          metadata,
          { deadline: Date.now() + 20_000 },
          (error, response) => done(error ? { ok: false, error, ms: Date.now() - started } : { ok: true, response: response!, ms: Date.now() - started }),
        );
      });
    },
    close: () => client.close(),
  };
}

/** A refusal's `grpc-status-details-bin`: its code, message and RetryInfo delay in seconds (null without one). */
export function statusDetails(bytes: Buffer | string | undefined | null): { code: number; message: string; retryDelaySeconds: number | null } | null {
  if (bytes === undefined || bytes === null) return null;
  const buffer = typeof bytes === "string" ? Buffer.from(bytes, "base64") : bytes;
  const status = RpcStatus.toObject(RpcStatus.decode(buffer), { defaults: true, longs: Number }) as { code: number; message: string; details: { type_url: string; value: Uint8Array }[] };
  const retry = status.details.find((d) => d.type_url === "type.googleapis.com/google.rpc.RetryInfo");
  const delay = retry ? (RetryInfo.toObject(RetryInfo.decode(retry.value), { defaults: true, longs: Number }) as { retry_delay: { seconds: number; nanos: number } }).retry_delay : null;
  return { code: status.code, message: status.message, retryDelaySeconds: delay ? delay.seconds + delay.nanos / 1e9 : null };
}

/** The details of a ServiceError's trailers. */
export const errorDetails = (error: ServiceError) => statusDetails(error.metadata.get("grpc-status-details-bin")[0] as Buffer | undefined);
