/* Targets: one canonical spelling per target, so that keys, cache paths and
 * names built from it are byte-identical however the user wrote it. */
#include "lib/codegen/target.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/error.h"
#include "uqjit.h"

/* Longest input we look at; anything longer cannot be a target we know. */
#define INPUT_MAX 64

/* AMD target features uqjit passes through to the compiler. Sorted by name:
 * the canonical order. */
static const char *const amd_features[] = {"sramecc", "xnack"};
#define AMD_FEATURE_COUNT (sizeof amd_features / sizeof amd_features[0])

/* GPUs by the names users call them. An NVIDIA part maps to exactly the
 * target it reports (sm_90a for a compute capability 9.0 part). An AMD
 * part maps to its bare architecture: a code object built without
 * sramecc/xnack features is one ROCm's loader accepts in every mode, and
 * a device reporting "gfx950:sramecc+:xnack-" finds it through
 * uq__target_loadable, so kernels warmed for the name serve the part
 * however it is set up. */
static const struct {
  const char *alias, *target;
} aliases[] = {
    {"mi355x", "gfx950"}, {"mi300x", "gfx942"}, {"mi325x", "gfx942"},
    {"mi250x", "gfx90a"}, {"mi250", "gfx90a"},  {"mi210", "gfx90a"},
    {"h100", "sm_90a"},   {"h200", "sm_90a"},
};
#define ALIAS_COUNT (sizeof aliases / sizeof aliases[0])

/* The alias list for messages: "mi355x, mi300x, ..." */
static void alias_names(char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < ALIAS_COUNT && used < n; i++)
    used += (size_t)snprintf(buf + used, n - used, "%s%s", i ? ", " : "",
                             aliases[i].alias);
}

static int lower_copy(const char *in, char *out, size_t n) {
  size_t len = strlen(in);
  if (len + 1 > n)
    return -1;
  for (size_t i = 0; i <= len; i++)
    out[i] = (char)tolower((unsigned char)in[i]);
  return 0;
}

/* "gfx" + digits: all but the last decimal, the last one a hex digit
 * (gfx90a, gfx90c). Three digits are GCN/CDNA (gfx6xx..gfx9xx), four are
 * RDNA (gfx10xx and up). */
static int parse_amd_arch(const char *s, size_t len, uq__target_info *info) {
  if (len < 6 || len > 7 || strncmp(s, "gfx", 3) != 0)
    return -1;
  const char *d = s + 3;
  size_t nd = len - 3;
  for (size_t i = 0; i + 1 < nd; i++)
    if (!isdigit((unsigned char)d[i]))
      return -1;
  if (!isxdigit((unsigned char)d[nd - 1]))
    return -1;
  if (nd == 3 && (d[0] < '6' || d[0] > '9'))
    return -1;
  if (nd == 4 && d[0] != '1')
    return -1;
  int arch = 0;
  for (size_t i = 0; i < nd; i++) {
    int v = isdigit((unsigned char)d[i]) ? d[i] - '0' : d[i] - 'a' + 10;
    arch = arch * 16 + v;
  }
  info->family = UQ__TARGET_AMD;
  info->arch = arch;
  memcpy(info->arch_name, s, len);
  info->arch_name[len] = '\0';
  /* Wave64 through CDNA (gfx9); RDNA (gfx10+) runs wave32 by default. */
  info->wave_size = nd == 3 ? 64 : 32;
  return 0;
}

static int parse_amd(const char *lower, const char *orig, char *canon,
                     size_t canon_n, uq__target_info *info) {
  const char *colon = strchr(lower, ':');
  size_t arch_len = colon ? (size_t)(colon - lower) : strlen(lower);
  if (parse_amd_arch(lower, arch_len, info) != 0)
    return uq__errorf(UQ_EINVAL,
                      "target '%s': expected gfx followed by 3 or 4 digits "
                      "(e.g. gfx950, gfx90a, gfx1100)",
                      orig);
  /* -1: absent, else the '+'/'-' sign given. */
  int sign[AMD_FEATURE_COUNT];
  for (size_t i = 0; i < AMD_FEATURE_COUNT; i++)
    sign[i] = -1;
  const char *p = colon;
  while (p != NULL) {
    const char *name = p + 1;
    const char *next = strchr(name, ':');
    size_t flen = next ? (size_t)(next - name) : strlen(name);
    if (flen < 2 || (name[flen - 1] != '+' && name[flen - 1] != '-'))
      return uq__errorf(UQ_EINVAL,
                        "target '%s': feature '%.*s' must end in + or -", orig,
                        (int)flen, name);
    size_t which = AMD_FEATURE_COUNT;
    for (size_t i = 0; i < AMD_FEATURE_COUNT; i++)
      if (strlen(amd_features[i]) == flen - 1 &&
          strncmp(amd_features[i], name, flen - 1) == 0)
        which = i;
    if (which == AMD_FEATURE_COUNT)
      return uq__errorf(UQ_EINVAL,
                        "target '%s': unknown feature '%.*s' (known: sramecc, "
                        "xnack)",
                        orig, (int)flen - 1, name);
    if (sign[which] >= 0)
      return uq__errorf(UQ_EINVAL, "target '%s': feature '%s' given twice",
                        orig, amd_features[which]);
    sign[which] = name[flen - 1];
    p = next;
  }
  char buf[UQ_TARGET_MAX];
  size_t used = (size_t)snprintf(buf, sizeof buf, "%s", info->arch_name);
  for (size_t i = 0; i < AMD_FEATURE_COUNT; i++) {
    if (sign[i] < 0)
      continue;
    used += (size_t)snprintf(buf + used, sizeof buf - used, ":%s%c",
                             amd_features[i], sign[i]);
  }
  if (used + 1 > canon_n)
    return uq__errorf(UQ_EINVAL, "target '%s': output buffer too small", orig);
  memcpy(canon, buf, used + 1);
  return 0;
}

/* "sm_NN", "sm_NNa", also "smNN" and any case. */
static int parse_nvidia(const char *lower, const char *orig, char *canon,
                        size_t canon_n, uq__target_info *info) {
  const char *d = lower + 2;
  if (*d == '_')
    d++;
  size_t nd = 0;
  while (isdigit((unsigned char)d[nd]))
    nd++;
  int suffix_a = d[nd] == 'a';
  if (nd < 2 || nd > 3 || d[0] == '0' || d[nd + (size_t)suffix_a] != '\0')
    return uq__errorf(UQ_EINVAL,
                      "target '%s': expected sm_ followed by 2 or 3 digits and "
                      "an optional 'a' (e.g. sm_90, sm_90a)",
                      orig);
  int arch = 0;
  for (size_t i = 0; i < nd; i++)
    arch = arch * 10 + (d[i] - '0');
  char buf[UQ_TARGET_MAX];
  int len = snprintf(buf, sizeof buf, "sm_%d%s", arch, suffix_a ? "a" : "");
  if ((size_t)len + 1 > canon_n || (size_t)len + 1 > sizeof info->arch_name)
    return uq__errorf(UQ_EINVAL, "target '%s': output buffer too small", orig);
  memcpy(canon, buf, (size_t)len + 1);
  info->family = UQ__TARGET_NVIDIA;
  info->arch = arch;
  memcpy(info->arch_name, buf, (size_t)len + 1);
  info->wave_size = 32;
  return 0;
}

int uq__target_parse(const char *target, char *out, size_t n,
                     uq__target_info *info) {
  if (target == NULL)
    return uq__errorf(UQ_EINVAL, "target is NULL");
  if (out == NULL || n == 0)
    return uq__errorf(UQ_EINVAL, "no output buffer for the target");
  char lower[INPUT_MAX];
  if (lower_copy(target, lower, sizeof lower) != 0)
    return uq__errorf(UQ_EINVAL, "target '%.*s...' is too long", 16, target);
  uq__target_info local;
  memset(&local, 0, sizeof local);
  /* Write nothing on failure, so callers never see half a target. */
  char canon[UQ_TARGET_MAX];
  int rc;
  for (size_t i = 0; i < ALIAS_COUNT; i++)
    if (strcmp(lower, aliases[i].alias) == 0) {
      snprintf(lower, sizeof lower, "%s", aliases[i].target);
      break;
    }
  if (strncmp(lower, "gfx", 3) == 0)
    rc = parse_amd(lower, target, canon, sizeof canon, &local);
  else if (strncmp(lower, "sm", 2) == 0)
    rc = parse_nvidia(lower, target, canon, sizeof canon, &local);
  else {
    char names[128];
    alias_names(names, sizeof names);
    rc = uq__errorf(UQ_EINVAL,
                    "unknown target '%s': expected an AMD gfxNNN (e.g. "
                    "gfx950, gfx942:sramecc+:xnack-), an NVIDIA sm_NN "
                    "(e.g. sm_90a) or a GPU name (%s)",
                    target, names);
  }
  if (rc != 0)
    return rc;
  size_t len = strlen(canon);
  if (len + 1 > n)
    return uq__errorf(UQ_EINVAL, "target '%s': output buffer too small",
                      target);
  memcpy(out, canon, len + 1);
  if (info != NULL)
    *info = local;
  return 0;
}

int uq__target_matrix_layer(const uq__target_info *info) {
  /* mma.sync with e4m3 operands exists from sm_89; the layer is written
   * and verified for sm_90 (templates/sm90/decode_mma_sm90.hip). */
  return info != NULL && info->family == UQ__TARGET_NVIDIA && info->arch >= 90;
}

int uq__target_gfx950_layer(const uq__target_info *info) {
  /* The scaled MFMA and the FP4 converts are CDNA4 instructions. */
  return info != NULL && info->family == UQ__TARGET_AMD &&
         strcmp(info->arch_name, "gfx950") == 0;
}

int uq__target_gfx950_emu_layer(const uq__target_info *info) {
  /* The emulation runs a wave64 as two warps exchanging through shared
   * memory with named barriers; it is written and run for sm_90. */
  return info != NULL && info->family == UQ__TARGET_NVIDIA && info->arch >= 90;
}

int uq__target_gfx942_layer(const uq__target_info *info) {
  /* FNUZ FP8 MFMA and v_cvt_pk_f32_fp8 are gfx940-family instructions;
   * the layer is written and checked for gfx942 (MI300X, MI325X). */
  return info != NULL && info->family == UQ__TARGET_AMD &&
         strcmp(info->arch_name, "gfx942") == 0;
}

int uq__target_gfx942_emu_layer(const uq__target_info *info) {
  /* The same two-warp emulation of a wave64 as gfx950-emu. */
  return uq__target_gfx950_emu_layer(info);
}

int uq__target_dependent_launch(const uq__target_info *info) {
  return info != NULL && info->family == UQ__TARGET_NVIDIA && info->arch >= 90;
}

int uq__target_warpgroup_layer(const uq__target_info *info) {
  /* wgmma exists only in the arch-specific sm_90a target: plain sm_90
   * code may not use it, and later architectures dropped it (sm_100a has
   * tcgen05 instead). */
  return info != NULL && info->family == UQ__TARGET_NVIDIA &&
         info->arch == 90 && strcmp(info->arch_name, "sm_90a") == 0;
}

int uq_target_canonical(const char *target, char *out, size_t n) {
  uq__error_clear();
  return uq__target_parse(target, out, n, NULL);
}

int uq__target_loadable(const char *target, int i, char *out, size_t n) {
  char canon[UQ_TARGET_MAX];
  uq__target_info info;
  if (i < 0 || uq__target_parse(target, canon, sizeof canon, &info) != 0)
    return UQ_EINVAL;
  /* The features in canonical order, and every subset of them, largest
   * first: a subset's code object asks only for modes the device has. */
  const char *feat[AMD_FEATURE_COUNT];
  size_t nf = 0;
  for (char *p = strchr(canon, ':'); p != NULL && nf < AMD_FEATURE_COUNT;
       p = strchr(p + 1, ':'))
    feat[nf++] = p + 1;
  for (char *p = strchr(canon, ':'); p != NULL; p = strchr(p + 1, ':'))
    *p = '\0';
  int seen = 0;
  for (int size = (int)nf; size >= 0; size--)
    for (unsigned mask = (1u << nf); mask-- > 0;) {
      if (__builtin_popcount(mask) != size || seen++ != i)
        continue;
      size_t used = (size_t)snprintf(out, n, "%s", info.arch_name);
      for (size_t f = 0; f < nf; f++)
        if (mask & (1u << (nf - 1 - f)))
          used += (size_t)snprintf(out + used, used < n ? n - used : 0,
                                   ":%s", feat[f]);
      return used < n ? 0 : UQ_EINVAL;
    }
  return UQ_ENOENT;
}
