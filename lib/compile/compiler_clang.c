/* Offline clang: builds AMD code objects with no ROCm installed at all
 * (-nogpulib -nogpuinc: the templates are self-contained). Spawned with
 * posix_spawn, never through a shell; every file, clang's own scratch
 * files included, lives in a private temporary directory that is removed
 * before returning (uq__os_scratch_make sweeps those of killed
 * processes). */
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/os.h"
#include "lib/base/uq_config.h"
#include "lib/compile/compiler_impl.h"

/* -ffp-contract=fast is HIP's default, spelled out because it is part of
 * the numerics contract and the cache key: contraction is allowed globally
 * and the templates protect the codec steps with explicit intrinsics (the
 * same policy as --fmad=true on NVRTC). -cuid fixes the compilation-unit
 * id that clang otherwise hashes from the source's path (a fresh temporary
 * directory each time) into the __hip_cuid_* symbol, so that one key always
 * compiles to the same bytes; each code object is loaded as a module of its
 * own, so no two ever need distinct ids. */
static void clang_options(const uq__compiler *cc, const char *target,
                          char *buf, size_t n) {
  (void)cc;
  snprintf(buf, n,
           "-x hip --offload-arch=%s -nogpulib -nogpuinc --cuda-device-only "
           "--no-gpu-bundle-output -O3 -std=c++17 -ffp-contract=fast -cuid=uqjit",
           target);
}

static int clang_compile(const uq__compiler *cc, const char *target,
                         const char *src, size_t len, const char *name,
                         void **obj, size_t *obj_len) {
  int status = 0;
  uq__os_scratch dir = {"", -1};
  char src_path[PATH_MAX + 300], out_path[PATH_MAX + 16];
  char opts[UQ__OPTIONS_MAX];
  const char *argv[24];
  char *log = NULL;
  int exit_code = 0;

  status = uq__os_scratch_make(&dir);
  if (status != 0)
    goto cleanup;
  /* The name shows up in the log's file:line prefixes; keep it a plain
   * file name whatever the caller passed. */
  char safe[200];
  size_t k = 0;
  for (const char *p = name; *p != '\0' && k + 1 < sizeof safe; p++)
    safe[k++] = (*p == '/' || *p == ' ') ? '_' : *p;
  safe[k] = '\0';
  snprintf(src_path, sizeof src_path, "%s/%s.hip", dir.path, safe);
  snprintf(out_path, sizeof out_path, "%s/out.co", dir.path);
  status = uq__os_write_file(src_path, src, len);
  if (status != 0)
    goto cleanup;

  clang_options(cc, target, opts, sizeof opts);
  int argc = 0;
  argv[argc++] = cc->location;
  argc += uq__compiler_split(opts, argv + argc, 18);
  argv[argc++] = "-o";
  argv[argc++] = out_path;
  argv[argc++] = src_path;
  argv[argc] = NULL;

  /* clang's own scratch files go to the same directory, removed below even
   * when clang fails; a killed process's directory is swept by the next. */
  status = uq__os_run_in((char *const *)argv, dir.path, NULL, NULL, &log,
                         &exit_code);
  if (status != 0)
    goto cleanup;
  if (exit_code != 0) {
    status = uq__errorf(UQ_ECOMPILE,
                        "%s failed to compile %s.hip for %s (exit %d):\n",
                        cc->identity, safe, target, exit_code);
    uq__error_append(log != NULL && log[0] != '\0' ? log : "(empty log)");
    goto cleanup;
  }
  status = uq__os_read_file(out_path, (char **)obj, obj_len);
  if (status != 0) {
    status = uq__error_wrap(UQ_ECOMPILE, "%s exited 0 but wrote no code object",
                            cc->identity);
    goto cleanup;
  }
cleanup:
  uq__os_scratch_remove(&dir);
  uq__free(log);
  return status;
}

/* "Debian clang version 22.1.8 (1~deb12u1) (/usr/lib/llvm-22/bin/clang)":
 * the version line plus the resolved executable, so that two installs of
 * the same version built differently never share cache entries. */
static int clang_identity(uq__compiler *cc) {
  char *out = NULL;
  int exit_code = 0;
  char *const argv[] = {cc->location, "--version", NULL};
  int status = uq__os_run(argv, NULL, &out, NULL, NULL, &exit_code);
  /* Not being able to run it (no scratch directory, no memory, a failed
   * spawn) keeps its own status: the compiler was found. */
  if (status != 0)
    return uq__error_wrap(status, "cannot run %s --version", cc->location);
  size_t line = strcspn(out, "\r\n");
  if (exit_code != 0 || line == 0 || strstr(out, "clang") == NULL) {
    status = uq__errorf(UQ_ENOCOMPILER,
                        "%s --version (exit %d) does not identify a clang: "
                        "'%.*s'",
                        cc->location, exit_code, (int)(line < 200 ? line : 200),
                        out);
    goto cleanup;
  }
  snprintf(cc->identity, sizeof cc->identity, "%.*s (%s)",
           (int)(line < 200 ? line : 200), out, cc->location);
cleanup:
  uq__free(out);
  return status;
}

int uq__clang_load(uq__compiler *cc) {
  const char *var = uq__env_name(UQ__ENV_CLANG);
  const char *forced = uq__env_get(UQ__ENV_CLANG);
  if (forced != NULL) {
    if (uq__os_find_program(forced, cc->location, sizeof cc->location) != 0)
      return uq__errorf(UQ_ENOCOMPILER,
                        "offline clang not found: %s=%s is not an executable "
                        "file%s",
                        var, forced,
                        strchr(forced, '/') != NULL ? "" : " on PATH");
  } else if (uq__os_find_program(UQ_DEFAULT_CLANG, cc->location,
                                 sizeof cc->location) != 0 &&
             uq__os_find_program("clang", cc->location,
                                 sizeof cc->location) != 0) {
    return uq__errorf(UQ_ENOCOMPILER,
                      "offline clang not found: looked for %s and clang on "
                      "PATH; set %s to its path",
                      UQ_DEFAULT_CLANG, var);
  }
  int status = clang_identity(cc);
  if (status != 0)
    return status;
  cc->options = clang_options;
  cc->compile = clang_compile;
  return 0;
}
