/* Counts the host waits of a process, for bench_kernels.py: a CUPTI callback subscriber on the
 * driver API (cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize) and the runtime API
 * (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize), counting every entry
 * between dlmd_count_start() and dlmd_count_stop(): those of the thread that called
 * dlmd_count_start() (the caller's, which a launch must not make wait) apart from those of
 * every other thread (such as dlmd's releasing thread, which waits for kernels to end the
 * holds on their tensors). Built where CUPTI is:
 *   gcc -shared -fPIC -I$CUDA/include -I$CUPTI/include count_syncs.c -L$CUPTI/lib64 -lcupti */
#include <cupti.h>
#include <pthread.h>

static long long counts[6];
static long long others[6];
static pthread_t caller;
static CUpti_SubscriberHandle subscriber;

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data) {
    (void)userdata;
    const CUpti_CallbackData *call = (const CUpti_CallbackData *)data;
    if (call->callbackSite != CUPTI_API_ENTER) {
        return;
    }
    long long *count = pthread_equal(pthread_self(), caller) ? counts : others;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
        switch (id) {
        case CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize: __atomic_fetch_add(&count[0], 1, __ATOMIC_RELAXED); break;
        case CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize: __atomic_fetch_add(&count[1], 1, __ATOMIC_RELAXED); break;
        case CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize: __atomic_fetch_add(&count[2], 1, __ATOMIC_RELAXED); break;
        default: break;
        }
    } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020: __atomic_fetch_add(&count[3], 1, __ATOMIC_RELAXED); break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020: __atomic_fetch_add(&count[4], 1, __ATOMIC_RELAXED); break;
        case CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020: __atomic_fetch_add(&count[5], 1, __ATOMIC_RELAXED); break;
        default: break;
        }
    }
}

/* Starts counting from zero, this thread's waits apart from the others'; returns CUPTI's status
 * (0: counting). */
int dlmd_count_start(void) {
    for (int i = 0; i < 6; i++) {
        counts[i] = 0;
        others[i] = 0;
    }
    caller = pthread_self();
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

/* Stops counting and writes the six counts of the calling thread, in the order above, to out,
 * and those of every other thread to out_others. */
int dlmd_count_stop(long long *out, long long *out_others) {
    CUptiResult status = cuptiUnsubscribe(subscriber);
    for (int i = 0; i < 6; i++) {
        out[i] = __atomic_load_n(&counts[i], __ATOMIC_RELAXED);
        out_others[i] = __atomic_load_n(&others[i], __ATOMIC_RELAXED);
    }
    return (int)status;
}
