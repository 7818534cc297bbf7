/* Counts the host waits of a process, for bench_kernels.py: a CUPTI callback subscriber on the
 * driver API (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize) and the runtime API
 * (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize), counting every entry
 * between dlmd_count_start() and dlmd_count_stop(). Built where CUPTI is:
 *   gcc -shared -fPIC -I$CUDA/include -I$CUPTI/include count_syncs.c -L$CUPTI/lib64 -lcupti */
#include <cupti.h>

static long long counts[6];
static CUpti_SubscriberHandle subscriber;

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data) {
    (void)userdata;
    const CUpti_CallbackData *call = (const CUpti_CallbackData *)data;
    if (call->callbackSite != CUPTI_API_ENTER) {
        return;
    }
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        switch (id) {
        case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize: counts[0]++; break;
        case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize: counts[1]++; break;
        case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize: counts[2]++; break;
        default: break;
        }
    } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020: counts[3]++; break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020: counts[4]++; break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020: counts[5]++; break;
        default: break;
        }
    }
}

/* Starts counting from zero; returns CUPTI's status (0: counting). */
int dlmd_count_start(void) {
    for (int i = 0; i < 6; i++) {
        counts[i] = 0;
    }
    CUptiResult status = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, 0);
    if (status != CUPTI_SUCCESS) {
        return (int)status;
    }
    status = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    if (status == CUPTI_SUCCESS) {
        status = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
    }
    return (int)status;
}

/* Stops counting and writes the six counts, in the order above, to out. */
int dlmd_count_stop(long long *out) {
    CUptiResult status = cuptiUnsubscribe(subscriber);
    for (int i = 0; i < 6; i++) {
        out[i] = counts[i];
    }
    return (int)status;
}
