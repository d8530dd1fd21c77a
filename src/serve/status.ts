/**
 * Errors a request can end in, with Triton's error classes (TRITONSERVER_Error
 * codes), so both transports answer as Triton's frontends do: HTTP status by
 * HttpCodeFromError (server r24.10, http_server.cc); the gRPC transport
 * maps them as grpc_utils.cc does. The tables are facts; the code is ours.
 */

export type StatusCode = 'UNKNOWN' | 'INTERNAL' | 'NOT_FOUND' | 'INVALID_ARG' | 'UNAVAILABLE' | 'UNSUPPORTED' | 'ALREADY_EXISTS' | 'CANCELLED';

export class RequestError extends Error {
  readonly status: StatusCode;
  constructor(status: StatusCode, message: string) {
    super(message);
    this.name = 'RequestError';
    this.status = status;
  }
}

/**
 * An error of a request Triton had already accepted: it comes back in the
 * response (a stream answers it with the response's fields and
 * triton_final_response), not when the request is issued.
 */
export class ResponseError extends RequestError {
  constructor(status: StatusCode, message: string) {
    super(status, message);
    this.name = 'ResponseError';
  }
}

export function invalidArg(message: string): RequestError {
  return new RequestError('INVALID_ARG', message);
}

const HTTP: Readonly<Record<StatusCode, number>> = {
  INTERNAL: 500,
  NOT_FOUND: 404,
  UNAVAILABLE: 503,
  UNSUPPORTED: 501,
  UNKNOWN: 400,
  INVALID_ARG: 400,
  ALREADY_EXISTS: 400,
  CANCELLED: 400,
};

export function httpStatusOf(code: StatusCode): number {
  return HTTP[code];
}

/** Any thrown value as a RequestError: our own pass through, anything else is INTERNAL with its message. */
export function asRequestError(error: unknown): RequestError {
  if (error instanceof RequestError) return error;
  return new RequestError('INTERNAL', error instanceof Error ? error.message : String(error));
}
