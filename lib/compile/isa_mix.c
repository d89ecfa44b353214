/* Instruction mix of an AMD disassembly: every instruction line classified
 * by its mnemonic, and the outermost loop found from backward branches
 * (the SOPP branch's simm16 is a signed word offset from the next
 * instruction: target = address + 4 + 4 * simm16, AMD's CDNA3/CDNA4 ISA
 * guides, "SOPP" instructions). */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/compile/disasm.h"
#include "uqjit_tools.h"

static const char *const class_names[UQ_ISA_CLASSES] = {
    "vmem", "lds", "mfma", "valu", "salu", "smem", "wait", "branch", "other"};

const char *uq_isa_class_name(int cls) {
  return cls >= 0 && cls < UQ_ISA_CLASSES ? class_names[cls] : NULL;
}

static int starts(const char *m, const char *prefix) {
  return strncmp(m, prefix, strlen(prefix)) == 0;
}

static int classify(const char *m) {
  if (starts(m, "global_") || starts(m, "buffer_") || starts(m, "flat_") ||
      starts(m, "scratch_") || starts(m, "tbuffer_"))
    return UQ_ISA_VMEM;
  if (starts(m, "ds_"))
    return UQ_ISA_LDS;
  if (starts(m, "v_mfma") || starts(m, "v_smfmac"))
    return UQ_ISA_MFMA;
  if (starts(m, "v_"))
    return UQ_ISA_VALU;
  if (starts(m, "s_waitcnt") || starts(m, "s_wait_") ||
      strcmp(m, "s_barrier") == 0 || strcmp(m, "s_nop") == 0 ||
      strcmp(m, "s_sleep") == 0)
    return UQ_ISA_WAIT;
  if (strcmp(m, "s_branch") == 0 || starts(m, "s_cbranch_") ||
      starts(m, "s_setpc") || starts(m, "s_swappc") ||
      strcmp(m, "s_endpgm") == 0)
    return UQ_ISA_BRANCH;
  if (starts(m, "s_load_") || starts(m, "s_buffer_load") ||
      starts(m, "s_store_") || starts(m, "s_buffer_store") ||
      starts(m, "s_dcache") || starts(m, "s_scratch_"))
    return UQ_ISA_SMEM;
  if (starts(m, "s_"))
    return UQ_ISA_SALU;
  return UQ_ISA_OTHER;
}

typedef struct insn {
  int cls;
  int has_addr;
  uint64_t addr;
  int backward; /* a branch whose target is at or before it */
  uint64_t target;
} insn;

/* One line: 1 and *out when it is an instruction ("\t<mnemonic> ..."). */
static int parse_line(const char *line, size_t n, void *slot) {
  insn *out = slot;
  size_t i = 0;
  if (n == 0 || (line[0] != '\t' && line[0] != ' '))
    return 0;
  while (i < n && (line[i] == '\t' || line[i] == ' '))
    i++;
  char m[48];
  size_t k = 0;
  while (i < n && k + 1 < sizeof m &&
         (islower((unsigned char)line[i]) || isdigit((unsigned char)line[i]) ||
          line[i] == '_'))
    m[k++] = line[i++];
  m[k] = '\0';
  if (k == 0 || !islower((unsigned char)m[0]) ||
      (i < n && !isspace((unsigned char)line[i])))
    return 0;
  memset(out, 0, sizeof *out);
  out->cls = classify(m);
  const char *c = NULL;
  for (size_t j = i; j + 1 < n; j++)
    if (line[j] == '/' && line[j + 1] == '/') {
      c = line + j + 2;
      break;
    }
  if (c != NULL) {
    char *end;
    unsigned long long a = strtoull(c, &end, 16);
    if (end != c && *end == ':') {
      out->has_addr = 1;
      out->addr = a;
    }
  }
  if (out->has_addr && (strcmp(m, "s_branch") == 0 || starts(m, "s_cbranch_"))) {
    char *end;
    long v = strtol(line + i, &end, 10);
    if (end != line + i && v >= 0 && v <= 65535) {
      int32_t simm = v > 32767 ? (int32_t)v - 65536 : (int32_t)v;
      int64_t t = (int64_t)out->addr + 4 + 4 * (int64_t)simm;
      if (t >= 0 && (uint64_t)t <= out->addr) {
        out->backward = 1;
        out->target = (uint64_t)t;
      }
    }
  }
  return 1;
}

int uq_code_isa_mix(const char *text, uq_isa_mix *mix) {
  uq__error_clear();
  if (text == NULL || mix == NULL)
    return uq__errorf(UQ_EINVAL, "uq_code_isa_mix: NULL argument");
  memset(mix, 0, sizeof *mix);
  void *lines = NULL;
  size_t n = 0;
  int status = uq__disasm_lines(text, sizeof(insn), parse_line, &lines, &n, "the instruction mix");
  if (status != 0)
    return status;
  insn *v = lines;
  if (n == 0) {
    uq__free(v);
    return uq__errorf(UQ_EINVAL, "uq_code_isa_mix: no instruction in the "
                      "text (not an AMD disassembly?)");
  }
  size_t best = n;
  for (size_t i = 0; i < n; i++) {
    mix->kernel[v[i].cls]++;
    if (v[i].backward &&
        (best == n || v[i].addr - v[i].target > v[best].addr - v[best].target))
      best = i;
  }
  if (best < n) {
    mix->loop_found = 1;
    mix->loop_begin = v[best].target;
    mix->loop_end = v[best].addr;
    for (size_t i = 0; i < n; i++) {
      if (!v[i].has_addr || v[i].addr < mix->loop_begin ||
          v[i].addr > mix->loop_end)
        continue;
      mix->loop[v[i].cls]++;
      if (v[i].backward && i != best)
        mix->inner_loops++;
    }
  }
  uq__free(v);
  return 0;
}
