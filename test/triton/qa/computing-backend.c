/*
 * A stand-in poplar backend for Triton's QA client tests (test/triton/qa/)
 * that computes what the QA models it stands in for compute, so that the
 * real tritonserver's answers carry outputs (raw binary responses, outputs
 * written into shared-memory regions) and the upstream tests' checks of
 * them mean something on both servers:
 *
 *   - a model with exactly two INT32 inputs INPUT0 and INPUT1 is Triton's
 *     "simple": OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1;
 *   - otherwise OUTPUTk is a copy of INPUTk (the identity models);
 *   - an output with no such input gets no tensor (the MNIST model, as
 *     test/triton/oracle/stand-in-backend.c answers it).
 *
 * popef serve computes the same through each stand-in model's ONNX graph
 * (test/triton/qa/qa-repository.ts). Written here from the signatures and
 * enum values in Triton's public tritonbackend.h and tritonserver.h; the
 * symbols are resolved in the tritonserver process at load.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;
typedef struct TRITONBACKEND_Input TRITONBACKEND_Input;
typedef struct TRITONBACKEND_Output TRITONBACKEND_Output;
typedef int TRITONSERVER_DataType;   /* an enum in tritonserver.h */
typedef int TRITONSERVER_MemoryType; /* an enum in tritonserver.h */

#define RESPONSE_COMPLETE_FINAL 1
#define REQUEST_RELEASE_ALL 1
#define TYPE_INT32 8
#define MEMORY_CPU 0
#define ERROR_INTERNAL 1 /* TRITONSERVER_ERROR_INTERNAL */

extern TRITONSERVER_Error* TRITONSERVER_ErrorNew(int code, const char* msg);
extern void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);
extern TRITONSERVER_Error* TRITONBACKEND_ResponseNew(
    TRITONBACKEND_Response** response, TRITONBACKEND_Request* request);
extern TRITONSERVER_Error* TRITONBACKEND_ResponseSend(
    TRITONBACKEND_Response* response, const uint32_t send_flags,
    TRITONSERVER_Error* error);
extern TRITONSERVER_Error* TRITONBACKEND_ResponseOutput(
    TRITONBACKEND_Response* response, TRITONBACKEND_Output** output,
    const char* name, const TRITONSERVER_DataType datatype,
    const int64_t* shape, const uint32_t dims_count);
extern TRITONSERVER_Error* TRITONBACKEND_OutputBuffer(
    TRITONBACKEND_Output* output, void** buffer,
    const uint64_t buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
    int64_t* memory_type_id);
extern TRITONSERVER_Error* TRITONBACKEND_RequestInputCount(
    TRITONBACKEND_Request* request, uint32_t* count);
extern TRITONSERVER_Error* TRITONBACKEND_RequestInput(
    TRITONBACKEND_Request* request, const char* name,
    TRITONBACKEND_Input** input);
extern TRITONSERVER_Error* TRITONBACKEND_InputProperties(
    TRITONBACKEND_Input* input, const char** name,
    TRITONSERVER_DataType* datatype, const int64_t** shape,
    uint32_t* dims_count, uint64_t* byte_size, uint32_t* buffer_count);
extern TRITONSERVER_Error* TRITONBACKEND_InputBuffer(
    TRITONBACKEND_Input* input, const uint32_t index, const void** buffer,
    uint64_t* buffer_byte_size, TRITONSERVER_MemoryType* memory_type,
    int64_t* memory_type_id);
extern TRITONSERVER_Error* TRITONBACKEND_RequestOutputCount(
    TRITONBACKEND_Request* request, uint32_t* count);
extern TRITONSERVER_Error* TRITONBACKEND_RequestOutputName(
    TRITONBACKEND_Request* request, const uint32_t index,
    const char** output_name);
extern TRITONSERVER_Error* TRITONBACKEND_RequestRelease(
    TRITONBACKEND_Request* request, uint32_t release_flags);
extern TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportStatistics(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request* request,
    const bool success, const uint64_t exec_start_ns,
    const uint64_t compute_start_ns, const uint64_t compute_end_ns,
    const uint64_t exec_end_ns);
extern TRITONSERVER_Error* TRITONBACKEND_ModelInstanceReportBatchStatistics(
    TRITONBACKEND_ModelInstance* instance, const uint64_t batch_size,
    const uint64_t exec_start_ns, const uint64_t compute_start_ns,
    const uint64_t compute_end_ns, const uint64_t exec_end_ns);

/* One input, gathered into one CPU buffer (the caller frees data). */
typedef struct {
  TRITONSERVER_DataType datatype;
  const int64_t* shape;
  uint32_t dims;
  uint64_t size;
  char* data;
} Tensor;

static uint64_t
now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Reads input `name`; a missing input is no error (*found stays false). */
static TRITONSERVER_Error*
read_input(TRITONBACKEND_Request* request, const char* name, Tensor* t, bool* found)
{
  TRITONBACKEND_Input* input = 0;
  *found = false;
  TRITONSERVER_Error* missing = TRITONBACKEND_RequestInput(request, name, &input);
  if (missing != 0) {
    TRITONSERVER_ErrorDelete(missing);
    return 0;
  }
  uint32_t buffers = 0;
  TRITONSERVER_Error* error = TRITONBACKEND_InputProperties(
      input, 0, &t->datatype, &t->shape, &t->dims, &t->size, &buffers);
  if (error != 0) return error;
  t->data = malloc(t->size > 0 ? t->size : 1);
  if (t->data == 0) return TRITONSERVER_ErrorNew(ERROR_INTERNAL, "out of memory");
  uint64_t at = 0;
  for (uint32_t b = 0; b < buffers; b++) {
    const void* part = 0;
    uint64_t part_size = 0;
    TRITONSERVER_MemoryType memory = MEMORY_CPU;
    int64_t memory_id = 0;
    error = TRITONBACKEND_InputBuffer(input, b, &part, &part_size, &memory, &memory_id);
    if (error == 0 && (memory != MEMORY_CPU || at + part_size > t->size))
      error = TRITONSERVER_ErrorNew(ERROR_INTERNAL, "input buffer not in CPU memory or larger than its tensor");
    if (error != 0) {
      free(t->data);
      return error;
    }
    memcpy(t->data + at, part, part_size);
    at += part_size;
  }
  *found = true;
  return 0;
}

static TRITONSERVER_Error*
write_output(TRITONBACKEND_Response* response, const char* name, const Tensor* like, const char* data)
{
  TRITONBACKEND_Output* output = 0;
  TRITONSERVER_Error* error = TRITONBACKEND_ResponseOutput(response, &output, name, like->datatype, like->shape, like->dims);
  if (error != 0) return error;
  void* buffer = 0;
  TRITONSERVER_MemoryType memory = MEMORY_CPU;
  int64_t memory_id = 0;
  error = TRITONBACKEND_OutputBuffer(output, &buffer, like->size, &memory, &memory_id);
  if (error != 0) return error;
  if (memory != MEMORY_CPU) return TRITONSERVER_ErrorNew(ERROR_INTERNAL, "output buffer not in CPU memory");
  memcpy(buffer, data, like->size);
  return 0;
}

static TRITONSERVER_Error*
compute(TRITONBACKEND_Request* request, TRITONBACKEND_Response* response)
{
  uint32_t input_count = 0, output_count = 0;
  TRITONSERVER_Error* error = TRITONBACKEND_RequestInputCount(request, &input_count);
  if (error == 0) error = TRITONBACKEND_RequestOutputCount(request, &output_count);
  Tensor in0 = {0}, in1 = {0};
  bool has0 = false, has1 = false;
  if (error == 0 && input_count == 2) error = read_input(request, "INPUT0", &in0, &has0);
  if (error == 0 && input_count == 2) error = read_input(request, "INPUT1", &in1, &has1);
  const bool simple = has0 && has1 && in0.datatype == TYPE_INT32 && in1.datatype == TYPE_INT32 && in0.size == in1.size;
  for (uint32_t i = 0; error == 0 && i < output_count; i++) {
    const char* name = 0;
    error = TRITONBACKEND_RequestOutputName(request, i, &name);
    if (error != 0) break;
    unsigned k = 0;
    char rest = 0;
    if (sscanf(name, "OUTPUT%u%c", &k, &rest) != 1) continue;
    if (simple && k < 2) {
      const int32_t* a = (const int32_t*)in0.data;
      const int32_t* b = (const int32_t*)in1.data;
      const size_t n = in0.size / sizeof(int32_t);
      int32_t* out = malloc(in0.size > 0 ? in0.size : 1);
      if (out == 0) {
        error = TRITONSERVER_ErrorNew(ERROR_INTERNAL, "out of memory");
        break;
      }
      for (size_t j = 0; j < n; j++) out[j] = k == 0 ? a[j] + b[j] : a[j] - b[j];
      error = write_output(response, name, &in0, (const char*)out);
      free(out);
      continue;
    }
    char input_name[32];
    snprintf(input_name, sizeof input_name, "INPUT%u", k);
    Tensor t = {0};
    bool found = false;
    error = read_input(request, input_name, &t, &found);
    if (error == 0 && found) error = write_output(response, name, &t, t.data);
    if (found) free(t.data);
  }
  if (has0) free(in0.data);
  if (has1) free(in1.data);
  return error;
}

TRITONSERVER_Error*
TRITONBACKEND_ModelInstanceExecute(
    TRITONBACKEND_ModelInstance* instance, TRITONBACKEND_Request** requests,
    const uint32_t request_count)
{
  const uint64_t start = now_ns();
  for (uint32_t i = 0; i < request_count; i++) {
    TRITONBACKEND_Response* response = 0;
    TRITONSERVER_Error* error = TRITONBACKEND_ResponseNew(&response, requests[i]);
    bool ok = error == 0;
    if (ok) {
      TRITONSERVER_Error* failed = compute(requests[i], response);
      ok = failed == 0;
      TRITONSERVER_Error* sent = TRITONBACKEND_ResponseSend(response, RESPONSE_COMPLETE_FINAL, failed);
      if (sent != 0) TRITONSERVER_ErrorDelete(sent);
    } else {
      TRITONSERVER_ErrorDelete(error);
    }
    const uint64_t end = now_ns();
    TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportStatistics(instance, requests[i], ok, start, start, end, end);
    if (e != 0) TRITONSERVER_ErrorDelete(e);
    e = TRITONBACKEND_RequestRelease(requests[i], REQUEST_RELEASE_ALL);
    if (e != 0) TRITONSERVER_ErrorDelete(e);
  }
  const uint64_t end = now_ns();
  TRITONSERVER_Error* e = TRITONBACKEND_ModelInstanceReportBatchStatistics(instance, request_count, start, start, end, end);
  if (e != 0) TRITONSERVER_ErrorDelete(e);
  return 0;
}
