/* aotc_threadpool.h: a persistent pthread pool for the multi-core entry points of models
 * compiled by aotc (<name>_run_buffers_mt). Header-only, C99 or C++; link with -pthread.
 *
 *   aotc_threadpool *pool = aotc_threadpool_create(2);    (NULL if threads cannot start)
 *   void *temp = aligned_alloc(64, model_temp_bytes_mt(pool->num_threads)); ...
 *   model_run_buffers_mt(args, results, temp, pool);
 *   aotc_threadpool_destroy(pool);
 *
 * num_threads - 1 worker threads start once; parallel_for hands them tasks and the calling
 * thread runs tasks too. Between calls the workers spin for a moment (AOTC_THREADPOOL_SPIN
 * pauses), so back-to-back kernels start without a wake-up, then sleep on a condition variable.
 * While the workers are awake a parallel_for takes no lock and allocates nothing: about half
 * a microsecond from posting to joining on two cores. One parallel_for at a time per pool (a
 * model's calls sharing a pool must not overlap).
 */
#ifndef AOTC_THREADPOOL_H
#define AOTC_THREADPOOL_H

#include <pthread.h>
#include <stdlib.h>

#ifndef AOTC_THREADPOOL_DEFINED
#define AOTC_THREADPOOL_DEFINED
/* A thread pool the caller lends the multi-core entry points: parallel_for(ctx, n, fn, arg)
   runs fn(arg, 0) ... fn(arg, n-1), on any threads, and returns when all have returned.
   aotc_threadpool.h (in the folder `aotc --include-dir` prints) makes one on pthreads. */
typedef struct aotc_threadpool {
  void *ctx;
  int num_threads;
  void (*parallel_for)(void *ctx, int n, void (*fn)(void *arg, int i), void *arg);
} aotc_threadpool;
#endif

#ifndef AOTC_THREADPOOL_SPIN
#define AOTC_THREADPOOL_SPIN 20000
#endif

#if defined(__x86_64__) || defined(__i386__)
#define AOTC_THREADPOOL_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) || defined(__arm__)
#define AOTC_THREADPOOL_PAUSE() __asm__ __volatile__("yield")
#else
#define AOTC_THREADPOOL_PAUSE() ((void)0)
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct aotc_threadpool_state {
  aotc_threadpool pool; /* first: what callers see; pool.ctx points here */
  pthread_t *workers;
  int num_workers;
  pthread_mutex_t lock;
  pthread_cond_t wake; /* a job was posted, or stop */
  pthread_cond_t done; /* the last task of a job finished */
  int sleepers;        /* workers waiting, or about to wait, on wake */
  int waiting;         /* the caller waits, or is about to wait, on done */
  int stop;            /* under lock */
  /* The job: (generation << 32) | tasks not yet claimed. A task is claimed by a
     compare-and-swap that keeps the generation, so a late worker never claims from the
     next job; fn and arg are read only after a claim, while the job cannot end. */
  unsigned long long state;
  unsigned long long generation;
  /* Tasks claimed from state and not yet finished: on a cache line of its own, so the
     threads finishing tasks do not take the line the others claim from. */
  char pad[64];
  int remaining;
  char pad2[64];
  void (*fn)(void *arg, int i);
  void *arg;
} aotc_threadpool_state;

static inline void aotc_threadpool_work_(aotc_threadpool_state *s, unsigned long long gen) {
  unsigned long long v = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  while ((v >> 32) == gen && (v & 0xffffffffu) != 0) {
    if (!__atomic_compare_exchange_n(&s->state, &v, v - 1, 1, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      continue; /* v now holds the current state */
    s->fn(s->arg, (int)((v & 0xffffffffu) - 1));
    /* The last task's thread takes the lock only when the caller sleeps (its wait sets
       waiting, then reads remaining: one of the two sees the other's write). */
    if (__atomic_sub_fetch(&s->remaining, 1, __ATOMIC_SEQ_CST) == 0 &&
        __atomic_load_n(&s->waiting, __ATOMIC_SEQ_CST)) {
      pthread_mutex_lock(&s->lock);
      pthread_cond_broadcast(&s->done);
      pthread_mutex_unlock(&s->lock);
    }
    v = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
  }
}

static inline void *aotc_threadpool_worker_(void *arg) {
  aotc_threadpool_state *s = (aotc_threadpool_state *)arg;
  unsigned long long seen = 0;
  for (;;) {
    unsigned long long gen = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) >> 32;
    for (int k = 0; gen == seen && k < AOTC_THREADPOOL_SPIN; ++k) {
      AOTC_THREADPOOL_PAUSE();
      gen = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) >> 32;
    }
    if (gen == seen) {
      pthread_mutex_lock(&s->lock);
      __atomic_add_fetch(&s->sleepers, 1, __ATOMIC_SEQ_CST);
      while (!s->stop && (gen = __atomic_load_n(&s->state, __ATOMIC_SEQ_CST) >> 32) == seen)
        pthread_cond_wait(&s->wake, &s->lock);
      __atomic_sub_fetch(&s->sleepers, 1, __ATOMIC_SEQ_CST);
      int stop = s->stop;
      pthread_mutex_unlock(&s->lock);
      if (stop) return NULL;
    }
    seen = gen;
    aotc_threadpool_work_(s, gen);
  }
}

static inline void aotc_threadpool_parallel_for_(void *ctx, int n, void (*fn)(void *arg, int i),
                                                 void *arg) {
  aotc_threadpool_state *s = (aotc_threadpool_state *)ctx;
  if (n <= 0) return;
  if (n == 1 || s->num_workers == 0) {
    for (int i = 0; i < n; ++i) fn(arg, i);
    return;
  }
  s->fn = fn;
  s->arg = arg;
  /* Task n-1 is the caller's from the start: it runs at once, and a worker's first claim
     does not race the caller's for the line. */
  __atomic_store_n(&s->remaining, n - 1, __ATOMIC_RELAXED);
  unsigned long long gen = ++s->generation;
  __atomic_store_n(&s->state, (gen << 32) | (unsigned)(n - 1), __ATOMIC_SEQ_CST);
  /* A worker going to sleep counts itself in sleepers, then reads state: one of the two
     sees the other's write, so no wake-up is lost and a busy pool takes no lock. */
  if (__atomic_load_n(&s->sleepers, __ATOMIC_SEQ_CST)) {
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
  }
  fn(arg, n - 1);
  aotc_threadpool_work_(s, gen);
  for (int k = 0; __atomic_load_n(&s->remaining, __ATOMIC_ACQUIRE) && k < AOTC_THREADPOOL_SPIN; ++k)
    AOTC_THREADPOOL_PAUSE();
  if (__atomic_load_n(&s->remaining, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&s->waiting, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_lock(&s->lock);
    while (__atomic_load_n(&s->remaining, __ATOMIC_SEQ_CST)) pthread_cond_wait(&s->done, &s->lock);
    pthread_mutex_unlock(&s->lock);
    __atomic_store_n(&s->waiting, 0, __ATOMIC_RELAXED);
  }
}

/* Stops the workers and frees the pool (NULL: nothing). */
static inline void aotc_threadpool_destroy(aotc_threadpool *pool) {
  if (!pool) return;
  aotc_threadpool_state *s = (aotc_threadpool_state *)pool->ctx;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->wake);
  pthread_mutex_unlock(&s->lock);
  for (int k = 0; k < s->num_workers; ++k) pthread_join(s->workers[k], NULL);
  pthread_cond_destroy(&s->done);
  pthread_cond_destroy(&s->wake);
  pthread_mutex_destroy(&s->lock);
  free(s->workers);
  free(s);
}

/* A pool of num_threads threads in all (the caller's included; less than 1 counts as 1), or
   NULL when memory or threads run out. */
static inline aotc_threadpool *aotc_threadpool_create(int num_threads) {
  aotc_threadpool_state *s = (aotc_threadpool_state *)calloc(1, sizeof *s);
  if (!s) return NULL;
  if (num_threads < 1) num_threads = 1;
  s->workers = (pthread_t *)calloc((size_t)num_threads, sizeof(pthread_t));
  if (!s->workers) {
    free(s);
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->wake, NULL);
  pthread_cond_init(&s->done, NULL);
  s->pool.ctx = s;
  s->pool.num_threads = num_threads;
  s->pool.parallel_for = aotc_threadpool_parallel_for_;
  for (int k = 0; k < num_threads - 1; ++k) {
    if (pthread_create(&s->workers[k], NULL, aotc_threadpool_worker_, s) != 0) {
      aotc_threadpool_destroy(&s->pool);
      return NULL;
    }
    s->num_workers++;
  }
  return &s->pool;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* AOTC_THREADPOOL_H */
