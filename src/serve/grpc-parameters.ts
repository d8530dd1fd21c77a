import { toInt, type ProtocolMessage } from '../triton/inference-protocol.js';
import { NO_SEQUENCE, type SequenceParameters } from './infer-request.js';
import { invalidArg } from './status.js';

/**
 * The `parameters` of a gRPC ModelInferRequest, checked as Triton's gRPC
 * frontend checks them before it reads any input (server r24.10,
 * grpc/infer_handler.cc, SetInferenceRequestMetadata): each known key wants
 * its own kinds of value; of the keys starting with `triton_` only the
 * reserved ones (common.h, TRITON_RESERVED_REQUEST_PARAMS) are allowed; any
 * other key is passed to the model, and must carry a value. perf_analyzer
 * sends triton_enable_empty_final_response on every request.
 */

/** The `triton_` keys a client may send (common.h). */
export const RESERVED_REQUEST_PARAMETERS = ['triton_enable_empty_final_response'] as const;

/** Which member of InferParameter's oneof is set (protobufjs names it `parameter_choice`). */
type Choice = 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param' | undefined;

/** What the parameters ask of the server. */
export interface GrpcRequestParameters {
  /** triton_enable_empty_final_response: a decoupled stream ends with an empty final response. */
  readonly enableEmptyFinalResponse: boolean;
  /** The scheduling parameters (the dynamic batcher's priority level, the queue timeout in microseconds). */
  readonly priority?: number;
  readonly timeoutUs?: number;
  /** sequence_id, sequence_start, sequence_end, when any was given. */
  readonly sequence?: SequenceParameters;
}

/** The kinds of value each key Triton reads accepts, with the words of its message naming them. */
const KNOWN: Readonly<Record<string, readonly [readonly Choice[], string]>> = {
  sequence_id: [['int64_param', 'string_param'], 'int64_param or string_param'],
  sequence_start: [['bool_param'], 'bool_param'],
  sequence_end: [['bool_param'], 'bool_param'],
  priority: [['int64_param', 'uint64_param'], 'int64_param or uint64_param'],
  timeout: [['int64_param'], 'int64_param'],
  triton_enable_empty_final_response: [['bool_param'], 'bool_param'],
};

export function grpcRequestParameters(parameters: Readonly<Record<string, ProtocolMessage>>): GrpcRequestParameters {
  let enableEmptyFinalResponse = false;
  const scheduling: { priority?: number; timeoutUs?: number; sequence?: SequenceParameters } = {};
  for (const [key, value] of Object.entries(parameters)) {
    const choice = (value as { parameter_choice?: Choice }).parameter_choice;
    if (key.startsWith('triton_') && !(RESERVED_REQUEST_PARAMETERS as readonly string[]).includes(key)) {
      throw invalidArg(
        `parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: ${RESERVED_REQUEST_PARAMETERS.join(' ')}`,
      );
    }
    const known = KNOWN[key];
    if (known !== undefined) {
      const [kinds, words] = known;
      if (!kinds.includes(choice)) throw invalidArg(`invalid value type for '${key}' parameter, expected ${words}.`);
      // A priority is also checked for its sign.
      if (key === 'priority' && choice === 'int64_param' && BigInt(String(value.int64_param)) < 0n)
        throw invalidArg("invalid value for 'priority', expected value >= 0.");
      if (key === 'triton_enable_empty_final_response') enableEmptyFinalResponse = value.bool_param === true;
      else if (key === 'priority') scheduling.priority = toInt(choice === 'int64_param' ? value.int64_param : value.uint64_param);
      else if (key === 'timeout') scheduling.timeoutUs = toInt(value.int64_param);
      else {
        const sequence = scheduling.sequence ?? NO_SEQUENCE;
        // The frontend keeps an int64 id as Triton's uint64 SequenceId: a negative one wraps around.
        if (key === 'sequence_id') {
          const id =
            choice === 'string_param'
              ? typeof value.string_param === 'string'
                ? value.string_param
                : ''
              : BigInt.asUintN(64, BigInt(String(value.int64_param)));
          scheduling.sequence = { ...sequence, id };
        } else if (key === 'sequence_start') scheduling.sequence = { ...sequence, start: value.bool_param === true };
        else scheduling.sequence = { ...sequence, end: value.bool_param === true };
      }
    } else if (choice === undefined || choice === 'uint64_param') {
      throw invalidArg(`invalid value type for '${key}' parameter, expected int64_param, bool_param, or string_param.`);
    }
  }
  return { enableEmptyFinalResponse, ...scheduling };
}
