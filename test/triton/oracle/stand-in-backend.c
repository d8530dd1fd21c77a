/*
 * A stand-in Triton backend for the differential tests: a shared library
 * with the one entry point Triton requires of a backend. It lets a real
 * tritonserver run every load-time check of a model (backend resolution,
 * instance groups, inputs and outputs, warmup) without the Poplar SDK.
 * Each request gets an empty, successful final response (so warmup
 * passes, as it would on an IPU), is reported to Triton's statistics as a
 * real backend reports it (one successful inference per request: the
 * differential tests send no batch larger than 1 that reaches a backend),
 * and is released.
 *
 * Written here from the signatures in Triton's public tritonbackend.h;
 * the symbols it uses are resolved in the tritonserver process at load.
 */
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

typedef struct TRITONSERVER_Error TRITONSERVER_Error;
typedef struct TRITONBACKEND_ModelInstance TRITONBACKEND_ModelInstance;
typedef struct TRITONBACKEND_Request TRITONBACKEND_Request;
typedef struct TRITONBACKEND_Response TRITONBACKEND_Response;

/* TRITONSERVER_RESPONSE_COMPLETE_FINAL and TRITONSERVER_REQUEST_RELEASE_ALL. */
#define RESPONSE_COMPLETE_FINAL 1
#define REQUEST_RELEASE_ALL 1

extern TRITONSERVER_Error* TRITONBACKEND_ResponseNew(
    TRITONBACKEND_Response** response, TRITONBACKEND_Request* request);
extern TRITONSERVER_Error* TRITONBACKEND_ResponseSend(
    TRITONBACKEND_Response* response, const uint32_t send_flags,
    TRITONSERVER_Error* error);
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
extern void TRITONSERVER_ErrorDelete(TRITONSERVER_Error* error);

static uint64_t
now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void
ignore(TRITONSERVER_Error* error)
{
  if (error != 0) {
    TRITONSERVER_ErrorDelete(error);
  }
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
    const bool sent = error == 0;
    if (sent) {
      ignore(TRITONBACKEND_ResponseSend(response, RESPONSE_COMPLETE_FINAL, 0));
    } else {
      ignore(error);
    }
    const uint64_t end = now_ns();
    /* Statistics are reported before the request is released, as a backend must. */
    ignore(TRITONBACKEND_ModelInstanceReportStatistics(
        instance, requests[i], sent, start, start, end, end));
    ignore(TRITONBACKEND_RequestRelease(requests[i], REQUEST_RELEASE_ALL));
  }
  const uint64_t end = now_ns();
  ignore(TRITONBACKEND_ModelInstanceReportBatchStatistics(
      instance, request_count, start, start, end, end));
  return 0;
}
