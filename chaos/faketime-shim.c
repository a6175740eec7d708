/*
 * Lets Debian's libfaketime run redis-server (the clock-step phase, chaos/nemesis.ts). Redis's
 * jemalloc calls pthread_cond_init() and clock_gettime() while it initialises; libfaketime
 * intercepts both, initialises itself there, allocates, and deadlocks on jemalloc's init lock (a
 * known clash: libfaketime issues 130 and 327). Preloaded before libfaketime, this library answers
 * those two calls itself until jemalloc and libfaketime are both initialised (its constructor forces
 * both), then hands clock_gettime() to libfaketime. It fakes nothing: libfaketime does.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int (*next_clock_gettime)(clockid_t, struct timespec *);
static int (*next_cond_init)(pthread_cond_t *, const pthread_condattr_t *);
static volatile int ready;

int clock_gettime(clockid_t clock, struct timespec *ts) {
  if (!ready) return (int)syscall(SYS_clock_gettime, clock, ts);
  return next_clock_gettime(clock, ts);
}

int pthread_cond_init(pthread_cond_t *cond, const pthread_condattr_t *attr) {
  if (attr == NULL || !ready) {
    pthread_cond_t fresh = PTHREAD_COND_INITIALIZER;
    *cond = fresh;
    return 0;
  }
  return next_cond_init(cond, attr);
}

__attribute__((constructor)) static void warm_up(void) {
  struct timespec ts;
  free(malloc(16)); /* jemalloc initialises now, its calls answered above */
  next_cond_init = (int (*)(pthread_cond_t *, const pthread_condattr_t *))dlsym(RTLD_NEXT, "pthread_cond_init");
  next_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  if (!next_clock_gettime || !next_cond_init) return;
  next_clock_gettime(CLOCK_REALTIME, &ts); /* libfaketime initialises now */
  ready = 1;
}
