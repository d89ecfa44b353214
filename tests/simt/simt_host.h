/* A CPU model of the CUDA execution the NVRTC route's kernels assume, so
 * that a generated kernel compiled by the host C++ compiler runs here:
 * each thread of a block is a fiber with its own stack;
 * blocks run one after another; __syncthreads() parks the fiber until
 * every live thread of the block has arrived, __shfl_xor_sync until every
 * live thread of its warp of 32 has. Threads that return count as
 * arrived. Between barriers threads run one at a time, in thread order in
 * even blocks and in reverse order in odd ones (blocks numbered x fastest),
 * so a read of shared data that another thread writes without a barrier
 * in between sees stale data in one of the two, whichever thread writes.
 * A barrier that can never complete (threads of one block or warp waiting
 * at different barriers) stops the run with an error instead of hanging.
 * Memory is the host's: __shared__ arrays are statics (one
 * block at a time), so a kernel's shared memory must be declared static.
 *
 * Included by tests/simt/prelude_host.hip only; C++ (the templates are). */
#ifndef UQ_SIMT_HOST_H
#define UQ_SIMT_HOST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

/* Compiled with AddressSanitizer (tests/simt/host_kernels.c does that in
 * the sanitizer build): every switch of stacks is announced to it, so it
 * checks the kernels' accesses on the fibers' stacks too. */
#if defined(__SANITIZE_ADDRESS__)
#define UQ_SIMT_ASAN 1
#include <sanitizer/common_interface_defs.h>
#else
#define UQ_SIMT_ASAN 0
#endif

/* Compiled with ThreadSanitizer (the CPU model's race check, .ci/run):
 * each thread is a ThreadSanitizer fiber, switched to without
 * synchronisation, and the only happens-before edges are the ones CUDA
 * gives: a block barrier (release on arrival, acquire on leaving, one sync
 * object per barrier parity so that a fast thread's next arrival is not
 * seen early), a warp shuffle's two warp barriers likewise, and the ends
 * of a launch. So any two accesses to shared memory (or to any buffer)
 * from different threads, one a write, with no barrier between them are
 * reported. The model's own bookkeeping is not instrumented. */
#if defined(__SANITIZE_THREAD__)
#define UQ_SIMT_TSAN 1
#include <sanitizer/tsan_interface.h>
#define UQ_SIMT_UNCHECKED __attribute__((no_sanitize("thread"), noinline))
#else
#define UQ_SIMT_TSAN 0
#define UQ_SIMT_UNCHECKED
#endif

struct uq_simt_dim3 {
  unsigned x, y, z;
};

#define UQ_SIMT_MAX_THREADS 1024
#define UQ_SIMT_STACK (128 * 1024)

enum { UQ_SIMT_RUN, UQ_SIMT_AT_BLOCK, UQ_SIMT_AT_WARP, UQ_SIMT_DONE };

/* Switching threads: on x86-64 a six-register switch (the SysV
 * callee-saved registers and the stack pointer), two orders of magnitude
 * cheaper than swapcontext, which also saves the signal mask with a
 * system call; ucontext elsewhere. */
#if defined(__x86_64__) && !defined(UQ_SIMT_UCONTEXT)
#define UQ_SIMT_ASM_SWITCH 1
extern "C" void uq_simt_swap(void **save_sp, void *load_sp);
__asm__(".text\n"
        ".p2align 4\n"
        ".hidden uq_simt_swap\n"
        ".globl uq_simt_swap\n"
        ".type uq_simt_swap, @function\n"
        "uq_simt_swap:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n"
        "  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n"
        "  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size uq_simt_swap, .-uq_simt_swap\n");
#endif

struct uq_simt_thread {
#if UQ_SIMT_ASM_SWITCH
  void *sp;
#else
  ucontext_t ctx;
#endif
  int state;
  void *asan_fake; /* AddressSanitizer's fake stack while parked */
  void *tsan_fiber;
  unsigned block_gen, warp_gen; /* barriers passed (ThreadSanitizer) */
};

/* The one machine of this process (kernels run on one host thread). */
static struct {
#if UQ_SIMT_ASM_SWITCH
  void *sched_sp;
#else
  ucontext_t sched;
#endif
  uq_simt_thread t[UQ_SIMT_MAX_THREADS];
  unsigned xchg[UQ_SIMT_MAX_THREADS]; /* a value per thread, for shuffles */
  char *stacks;
  const void *sched_bottom; /* the scheduler's stack, for AddressSanitizer */
  size_t sched_size;
  void *sched_fake;
  void *tsan_sched; /* ThreadSanitizer: the scheduler's fiber, and the */
  char tsan_block[2];      /* sync objects of block barriers by parity, */
  char tsan_warp[UQ_SIMT_MAX_THREADS / 32][2]; /* of warp barriers, */
  char tsan_start;         /* what threads see on starting (the caller, */
  char tsan_done;          /* earlier blocks), what returned threads did */
  int nthreads;
  int cur;
  void (*body)(const void *);
  const void *params;
} uq_simt;

/* What the running thread reads as threadIdx / blockIdx / blockDim /
 * gridDim: set by the scheduler each time it resumes a thread. */
static uq_simt_dim3 threadIdx, blockIdx, blockDim, gridDim;

/* Parks the running thread and returns to the scheduler; a thread that
 * is done is never resumed. */
UQ_SIMT_UNCHECKED static void uq_simt_park(int state) {
  uq_simt_thread *t = &uq_simt.t[uq_simt.cur];
  t->state = state;
#if UQ_SIMT_TSAN
  char *warp = uq_simt.tsan_warp[uq_simt.cur / 32];
  if (state == UQ_SIMT_AT_BLOCK) {
    __tsan_release(&uq_simt.tsan_block[t->block_gen & 1]);
  } else if (state == UQ_SIMT_AT_WARP) {
    __tsan_release(&warp[t->warp_gen & 1]);
  } else { /* returned: arrived at every later barrier, and at the end */
    __tsan_release(&uq_simt.tsan_block[0]);
    __tsan_release(&uq_simt.tsan_block[1]);
    __tsan_release(&warp[0]);
    __tsan_release(&warp[1]);
    __tsan_release(&uq_simt.tsan_done);
  }
  __tsan_switch_to_fiber(uq_simt.tsan_sched, __tsan_switch_to_fiber_no_sync);
#endif
#if UQ_SIMT_ASAN
  __sanitizer_start_switch_fiber(state == UQ_SIMT_DONE ? nullptr : &t->asan_fake,
                                 uq_simt.sched_bottom, uq_simt.sched_size);
#endif
#if UQ_SIMT_ASM_SWITCH
  uq_simt_swap(&t->sp, uq_simt.sched_sp);
#else
  swapcontext(&t->ctx, &uq_simt.sched);
#endif
#if UQ_SIMT_ASAN
  __sanitizer_finish_switch_fiber(t->asan_fake, &uq_simt.sched_bottom, &uq_simt.sched_size);
#endif
#if UQ_SIMT_TSAN
  if (state == UQ_SIMT_AT_BLOCK)
    __tsan_acquire(&uq_simt.tsan_block[t->block_gen++ & 1]);
  else
    __tsan_acquire(&warp[t->warp_gen++ & 1]);
#endif
}

static inline void __syncthreads() { uq_simt_park(UQ_SIMT_AT_BLOCK); }

static inline unsigned uq_simt_shfl_xor(unsigned mask, unsigned v, int lane_mask) {
  if (mask != 0xffffffffu) {
    fprintf(stderr, "simt: __shfl_xor_sync with a partial mask 0x%x\n", mask);
    abort();
  }
  const int me = uq_simt.cur;
  uq_simt.xchg[me] = v;
  uq_simt_park(UQ_SIMT_AT_WARP); /* every lane has written */
  const unsigned r = uq_simt.xchg[(me & ~31) | ((me & 31) ^ (lane_mask & 31))];
  uq_simt_park(UQ_SIMT_AT_WARP); /* every lane has read */
  return r;
}
static inline unsigned __shfl_xor_sync(unsigned mask, unsigned v, int lane_mask) {
  return uq_simt_shfl_xor(mask, v, lane_mask);
}
static inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  unsigned u;
  memcpy(&u, &v, sizeof u);
  u = uq_simt_shfl_xor(mask, u, lane_mask);
  memcpy(&v, &u, sizeof v);
  return v;
}

UQ_SIMT_UNCHECKED static void uq_simt_entry() {
#if UQ_SIMT_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &uq_simt.sched_bottom, &uq_simt.sched_size);
#endif
#if UQ_SIMT_TSAN
  __tsan_acquire(&uq_simt.tsan_start);
#endif
  uq_simt.body(uq_simt.params);
  uq_simt_park(UQ_SIMT_DONE); /* never resumed */
  abort();
}

/* Thread i's first resumption enters uq_simt_entry on its own stack. */
UQ_SIMT_UNCHECKED static void uq_simt_start(int i) {
  uq_simt_thread *t = &uq_simt.t[i];
  char *base = uq_simt.stacks + (size_t)i * UQ_SIMT_STACK;
#if UQ_SIMT_ASM_SWITCH
  /* From the top: a null return address for uq_simt_entry (which never
   * returns), the address uq_simt_swap's ret jumps to, six zeroed
   * registers. After the ret the stack pointer is 8 mod 16, as at any
   * function's entry. */
  void **top = (void **)(((unsigned long)(base + UQ_SIMT_STACK)) & ~15ul);
  top[-1] = 0;
  top[-2] = (void *)uq_simt_entry;
  for (int r = 3; r <= 8; r++)
    top[-r] = 0;
  t->sp = top - 8;
#else
  getcontext(&t->ctx);
  t->ctx.uc_stack.ss_sp = base;
  t->ctx.uc_stack.ss_size = UQ_SIMT_STACK;
  t->ctx.uc_link = nullptr; /* uq_simt_entry never returns */
  makecontext(&t->ctx, uq_simt_entry, 0);
#endif
  t->state = UQ_SIMT_RUN;
  t->block_gen = t->warp_gen = 0;
}

UQ_SIMT_UNCHECKED static void uq_simt_resume(int i) {
  uq_simt.cur = i;
  threadIdx = uq_simt_dim3{(unsigned)i, 0u, 0u};
#if UQ_SIMT_TSAN
  __tsan_switch_to_fiber(uq_simt.t[i].tsan_fiber, __tsan_switch_to_fiber_no_sync);
#endif
#if UQ_SIMT_ASAN
  __sanitizer_start_switch_fiber(&uq_simt.sched_fake, uq_simt.stacks + (size_t)i * UQ_SIMT_STACK,
                                 UQ_SIMT_STACK);
#endif
#if UQ_SIMT_ASM_SWITCH
  uq_simt_swap(&uq_simt.sched_sp, uq_simt.t[i].sp);
#else
  swapcontext(&uq_simt.sched, &uq_simt.t[i].ctx);
#endif
#if UQ_SIMT_ASAN
  __sanitizer_finish_switch_fiber(uq_simt.sched_fake, nullptr, nullptr);
#endif
}

/* Releases the threads parked at a barrier that is complete; returns how
 * many it released. */
UQ_SIMT_UNCHECKED static int uq_simt_release() {
  int n = uq_simt.nthreads, released = 0;
  int live = 0, at_block = 0;
  for (int i = 0; i < n; i++) {
    live += uq_simt.t[i].state != UQ_SIMT_DONE;
    at_block += uq_simt.t[i].state == UQ_SIMT_AT_BLOCK;
  }
  if (live > 0 && at_block == live) {
    for (int i = 0; i < n; i++)
      if (uq_simt.t[i].state == UQ_SIMT_AT_BLOCK)
        uq_simt.t[i].state = UQ_SIMT_RUN;
    return live;
  }
  for (int w = 0; w < n; w += 32) {
    int wl = 0, at_warp = 0;
    for (int i = w; i < w + 32 && i < n; i++) {
      wl += uq_simt.t[i].state != UQ_SIMT_DONE;
      at_warp += uq_simt.t[i].state == UQ_SIMT_AT_WARP;
    }
    if (wl > 0 && at_warp == wl) {
      for (int i = w; i < w + 32 && i < n; i++)
        if (uq_simt.t[i].state == UQ_SIMT_AT_WARP)
          uq_simt.t[i].state = UQ_SIMT_RUN;
      released += wl;
    }
  }
  return released;
}

/* Runs body(params) as a grid of `grid` blocks of `threads` threads.
 * Returns 0, or -1 with a message in err when a barrier cannot complete or
 * the arguments are out of range. */
/* ThreadSanitizer's edges at the ends of blocks and launches: a block's
 * threads start after whatever the caller did before the launch and after
 * every earlier block (but not after each other); the caller goes on
 * after every block. The scheduler runs as the calling thread. */
UQ_SIMT_UNCHECKED static void uq_simt_tsan_launch_begin(int threads) {
#if UQ_SIMT_TSAN
  uq_simt.tsan_sched = __tsan_get_current_fiber();
  for (int i = 0; i < threads; i++)
    uq_simt.t[i].tsan_fiber = __tsan_create_fiber(0);
  __tsan_release(&uq_simt.tsan_start);
#else
  (void)threads;
#endif
}
UQ_SIMT_UNCHECKED static void uq_simt_tsan_block_end() {
#if UQ_SIMT_TSAN
  __tsan_acquire(&uq_simt.tsan_done);
  __tsan_release(&uq_simt.tsan_start);
#endif
}
UQ_SIMT_UNCHECKED static void uq_simt_tsan_launch_end(int threads) {
#if UQ_SIMT_TSAN
  __tsan_acquire(&uq_simt.tsan_done);
  for (int i = 0; i < threads; i++)
    __tsan_destroy_fiber(uq_simt.t[i].tsan_fiber);
#else
  (void)threads;
#endif
}

UQ_SIMT_UNCHECKED static int uq_simt_run(const unsigned grid[3], int threads,
                                         void (*body)(const void *),
                       const void *params, char *err, size_t errlen) {
  if (threads < 1 || threads > UQ_SIMT_MAX_THREADS) {
    snprintf(err, errlen, "simt: %d threads a block", threads);
    return -1;
  }
  /* The stacks live for one run: nothing stays allocated between runs
   * (the shared object may be unloaded at any time after). */
  uq_simt.stacks = (char *)malloc((size_t)threads * UQ_SIMT_STACK);
  if (uq_simt.stacks == NULL) {
    snprintf(err, errlen, "simt: out of memory for the thread stacks");
    return -1;
  }
  uq_simt_tsan_launch_begin(threads);
  uq_simt.nthreads = threads;
  uq_simt.body = body;
  uq_simt.params = params;
  blockDim = uq_simt_dim3{(unsigned)threads, 1u, 1u};
  gridDim = uq_simt_dim3{grid[0], grid[1], grid[2]};
  for (unsigned z = 0; z < grid[2]; z++)
    for (unsigned y = 0; y < grid[1]; y++)
      for (unsigned x = 0; x < grid[0]; x++) {
        blockIdx = uq_simt_dim3{x, y, z};
        for (int i = 0; i < threads; i++)
          uq_simt_start(i);
        const int reverse = (int)((x + grid[0] * (y + grid[1] * z)) & 1u);
        for (;;) {
          int ran = 0;
          for (int k = 0; k < threads; k++) {
            const int i = reverse ? threads - 1 - k : k;
            if (uq_simt.t[i].state != UQ_SIMT_RUN)
              continue;
            uq_simt_resume(i);
            ran++;
          }
          if (uq_simt_release() > 0)
            continue;
          int live = 0;
          for (int i = 0; i < threads; i++)
            live += uq_simt.t[i].state != UQ_SIMT_DONE;
          if (live == 0) {
            uq_simt_tsan_block_end();
            break;
          }
          if (ran == 0) {
            int at_block = 0, at_warp = 0;
            for (int i = 0; i < threads; i++) {
              at_block += uq_simt.t[i].state == UQ_SIMT_AT_BLOCK;
              at_warp += uq_simt.t[i].state == UQ_SIMT_AT_WARP;
            }
            snprintf(err, errlen,
                     "simt: block (%u, %u, %u) deadlocked: %d threads at "
                     "__syncthreads, %d at a warp shuffle, %d returned",
                     x, y, z, at_block, at_warp, threads - at_block - at_warp);
            uq_simt_tsan_launch_end(threads);
            free(uq_simt.stacks);
            uq_simt.stacks = NULL;
            return -1;
          }
        }
      }
  uq_simt_tsan_launch_end(threads);
  free(uq_simt.stacks);
  uq_simt.stacks = NULL;
  return 0;
}

#endif
