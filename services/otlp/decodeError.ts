import { ClientError } from "../errors.js";

/**
 * The request body cannot be read as an OTLP export request (bad protobuf, bad JSON, or
 * JSON of the wrong shape). Permanent: answered 400 with a `google.rpc.Status`, never retried.
 */
export class OtlpDecodeError extends ClientError {
  constructor(message: string) {
    super(400, message);
    this.name = "OtlpDecodeError";
  }
}
