/* The store cases (store_cases.c) with uq_store's kernel running on the
 * CPU model (tests/simt/host_kernels.h): the NVRTC-route store kernel for
 * sm_90a must write the CPU encoder's bytes. Exits 77 without a host C++
 * compiler. */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tests/simt/host_kernels.h"
#include "tests/runtime/store_cases.h"

static int host_run_store(const store_job *job, uint8_t *got) {
  uq_store_args a = *job->args;
  a.kv_cache = got;
  return hk_store(&a, "sm_90a");
}

static void store_kernel_writes_the_cpu_encoders_bytes(void **st) {
  (void)st;
  store_cases_all(host_run_store);
}

int main(void) {
  char cxx[PATH_MAX];
  if (hk_find_compiler(cxx, sizeof cxx) != 0) {
    printf("SKIP: no host C++ compiler (c++, g++, clang++; or UQ_TEST_CXX)\n");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(store_kernel_writes_the_cpu_encoders_bytes),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  hk_shutdown();
  return rc;
}
