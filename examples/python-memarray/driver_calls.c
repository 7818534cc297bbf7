/* Counts and times the driver API calls of a process, for bench_jax.py: a CUPTI callback
 * subscriber on the driver API that, between dlmd_calls_start() and dlmd_calls_stop(), adds up
 * each call's count and its time from entry to exit (CLOCK_MONOTONIC) by callback id, for the
 * thread that called dlmd_calls_start() apart from every other thread. The callbacks themselves
 * lengthen each call: times compare with each other, not with a run without the subscriber.
 * Built where CUPTI is, as count_syncs.c is:
 *   gcc -shared -fPIC -I$CUDA/include -I$CUPTI/include driver_calls.c -L$CUPTI/lib64 -lcupti */
#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Above every driver callback id CUPTI 13 names; a larger one is counted as "others". */
#define IDS 1024

static long long counts[2][IDS + 1];
static long long nanos[2][IDS + 1];
static pthread_t caller;
static CUpti_SubscriberHandle subscriber;
static __thread long long entered;

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void CUPTIAPI on_call(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void *data) {
    (void)userdata;
    (void)domain;
    const CUpti_CallbackData *call = (const CUpti_CallbackData *)data;
    if (call->callbackSite == CUPTI_API_ENTER) {
        entered = now();
        return;
    }
    int thread = pthread_equal(pthread_self(), caller) ? 0 : 1;
    unsigned slot = id < IDS ? id : IDS;
    __atomic_fetch_add(&counts[thread][slot], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&nanos[thread][slot], now() - entered, __ATOMIC_RELAXED);
}

/* Starts counting from zero; returns CUPTI's status (0: counting). */
int dlmd_calls_start(void) {
    memset(counts, 0, sizeof counts);
    memset(nanos, 0, sizeof nanos);
    caller = pthread_self();
    CUptiResult status = cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_call, 0);
    if (status != CUPTI_SUCCESS) {
        return (int)status;
    }
    return (int)cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
}

/* Stops counting and writes one line a call that was made, "THREAD NAME COUNT NANOSECONDS"
 * (THREAD: caller or other), into out (len bytes, NUL-terminated); returns the length the
 * lines need, which is more than len - 1 where they were cut. */
int dlmd_calls_stop(char *out, int len) {
    cuptiUnsubscribe(subscriber);
    int written = 0;
    for (int thread = 0; thread < 2; thread++) {
        for (int id = 0; id <= IDS; id++) {
            long long count = __atomic_load_n(&counts[thread][id], __ATOMIC_RELAXED);
            if (count == 0) {
                continue;
            }
            const char *name = 0;
            if (id == IDS || cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, id, &name) != CUPTI_SUCCESS || !name) {
                name = "others";
            }
            /* Past the end, only the length is counted (snprintf writes nothing for 0 bytes). */
            char *at = written < len ? out + written : NULL;
            size_t room = written < len ? (size_t)(len - written) : 0;
            written += snprintf(at, room, "%s %s %lld %lld\n",
                                thread ? "other" : "caller", name, count,
                                __atomic_load_n(&nanos[thread][id], __ATOMIC_RELAXED));
        }
    }
    return written;
}
