/* The chunk loop of an NVIDIA disassembly (cuobjdump / nvdisasm SASS):
 * an instruction line is an address comment (hex between slash-star and
 * star-slash), an optional predicate ("@P0", "@!UP1"; "@PT" is none),
 * the opcode with its modifiers ("IMAD.SHL.U32") and the operands up to
 * ';'; a branch is "BRA[.<mods>] [<reg>,] 0x<target>". The loop is a
 * backward branch's span; its fast path is the walk from the head that
 * takes every forward branch landing inside the span (the rare paths the
 * decode kernels guard: a copy issued by a few threads, a softmax
 * reference to move, a partial last chunk) and falls through the others. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/error.h"
#include "lib/compile/disasm.h"
#include "uqjit_tools.h"

typedef struct sass_insn {
  uint64_t addr;
  char op[UQ_SASS_OP_LEN];
  int matrix;      /* a tensor-core instruction */
  int branch;      /* BRA with a readable target */
  int conditional; /* predicated by anything but PT */
  uint64_t target;
} sass_insn;

static const char *const matrix_ops[] = {"HMMA", "HGMMA", "QGMMA", "IMMA", "IGMMA",
                                         "BGMMA", "DMMA", "UTCHMMA", "UTCQMMA"};

/* One line: 1 and *out when it holds an instruction. */
static int parse_line(const char *line, size_t n, void *slot) {
  sass_insn *out = slot;
  size_t i = 0;
  while (i + 1 < n && !(line[i] == '/' && line[i + 1] == '*'))
    i++;
  if (i + 1 >= n)
    return 0;
  i += 2;
  size_t digits = 0;
  uint64_t addr = 0;
  while (i < n && isxdigit((unsigned char)line[i]) && digits < 16) {
    int c = tolower((unsigned char)line[i]);
    addr = addr * 16 + (uint64_t)(isdigit(c) ? c - '0' : c - 'a' + 10);
    i++;
    digits++;
  }
  if (digits == 0 || i + 1 >= n || line[i] != '*' || line[i + 1] != '/')
    return 0;
  i += 2;
  while (i < n && isspace((unsigned char)line[i]))
    i++;
  memset(out, 0, sizeof *out);
  out->addr = addr;
  if (i < n && line[i] == '@') {
    size_t p = i + 1;
    if (p < n && line[p] == '!')
      p++;
    size_t q = p;
    while (q < n && !isspace((unsigned char)line[q]))
      q++;
    out->conditional = !(q - p == 2 && strncmp(line + p, "PT", 2) == 0);
    i = q;
    while (i < n && isspace((unsigned char)line[i]))
      i++;
  }
  size_t k = 0;
  while (i < n && (isupper((unsigned char)line[i]) || isdigit((unsigned char)line[i]) ||
                   line[i] == '_')) {
    if (k + 1 < sizeof out->op)
      out->op[k++] = line[i];
    i++;
  }
  out->op[k] = '\0';
  if (k == 0 || !isupper((unsigned char)out->op[0]))
    return 0;
  for (size_t m = 0; m < sizeof matrix_ops / sizeof matrix_ops[0]; m++)
    if (strcmp(out->op, matrix_ops[m]) == 0)
      out->matrix = 1;
  if (strcmp(out->op, "BRA") == 0) {
    /* The target is the last "0x" operand before the ';'. */
    const char *last = NULL;
    for (size_t j = i; j + 1 < n && line[j] != ';'; j++)
      if (line[j] == '0' && line[j + 1] == 'x')
        last = line + j;
    if (last != NULL) {
      char *end;
      unsigned long long t = strtoull(last, &end, 16);
      if (end != last + 2) {
        out->branch = 1;
        out->target = t;
      }
    }
  }
  return 1;
}

/* Index of the instruction at `addr` in [lo, hi], or hi + 1. */
static size_t index_of(const sass_insn *v, size_t lo, size_t hi, uint64_t addr) {
  for (size_t i = lo; i <= hi; i++)
    if (v[i].addr == addr)
      return i;
  return hi + 1;
}

/* Adds one instruction of opcode `op` to the body (or path) counts. */
static void count_op(uq_sass_loop *l, const char *op, int path) {
  int slot = -1;
  for (int i = 0; i < l->n_ops; i++)
    if (strcmp(l->ops[i].name, op) == 0)
      slot = i;
  if (slot < 0 && l->n_ops < UQ_SASS_OPS) {
    slot = l->n_ops++;
    memset(&l->ops[slot], 0, sizeof l->ops[slot]);
    memcpy(l->ops[slot].name, op, strlen(op) + 1);
  }
  if (slot < 0) { /* more opcodes than slots: counted apart */
    if (path)
      l->other_path++;
    else
      l->other_body++;
    return;
  }
  if (path)
    l->ops[slot].path++;
  else
    l->ops[slot].body++;
}

static int by_path_then_name(const void *a, const void *b) {
  const uq_sass_op *x = a, *y = b;
  if (x->path != y->path)
    return x->path > y->path ? -1 : 1;
  if (x->body != y->body)
    return x->body > y->body ? -1 : 1;
  return strcmp(x->name, y->name);
}

int uq_code_sass_loop(const char *text, uq_sass_loop *loop) {
  uq__error_clear();
  if (text == NULL || loop == NULL)
    return uq__errorf(UQ_EINVAL, "uq_code_sass_loop: NULL argument");
  memset(loop, 0, sizeof *loop);
  void *lines = NULL;
  size_t n = 0;
  int status = uq__disasm_lines(text, sizeof(sass_insn), parse_line, &lines, &n, "the SASS loop");
  if (status != 0)
    return status;
  sass_insn *v = lines;
  if (n == 0) {
    uq__free(v);
    return uq__errorf(UQ_EINVAL, "uq_code_sass_loop: no instruction in the text "
                      "(not an NVIDIA disassembly?)");
  }
  size_t matrix = 0;
  for (size_t i = 0; i < n; i++)
    matrix += (size_t)v[i].matrix;
  /* The loop: with matrix instructions, the narrowest backward span that
   * holds all of them (out-of-line code past the kernel's exit branches
   * back into the loop over a wider span); else the widest span. */
  size_t best_lo = n, best_hi = n;
  for (size_t i = 0; i < n; i++) {
    if (!v[i].branch || v[i].target > v[i].addr)
      continue;
    size_t lo = index_of(v, 0, i, v[i].target);
    if (lo > i)
      continue;
    size_t held = 0;
    for (size_t j = lo; j <= i; j++)
      held += (size_t)v[j].matrix;
    int better;
    if (matrix > 0)
      better = held == matrix && (best_lo == n || i - lo < best_hi - best_lo);
    else
      better = best_lo == n || i - lo > best_hi - best_lo;
    if (better) {
      best_lo = lo;
      best_hi = i;
    }
  }
  if (best_lo == n) {
    uq__free(v);
    return 0; /* no loop: found stays 0 */
  }
  loop->found = 1;
  loop->begin = v[best_lo].addr;
  loop->end = v[best_hi].addr;
  for (size_t i = best_lo; i <= best_hi; i++) {
    count_op(loop, v[i].op, 0);
    loop->body_total++;
  }
  /* The fast path: forward only, so it ends. */
  size_t i = best_lo;
  loop->path_complete = 1;
  for (;;) {
    count_op(loop, v[i].op, 1);
    loop->path_total++;
    if (i == best_hi)
      break;
    if (v[i].branch && v[i].target > v[i].addr) {
      size_t t = index_of(v, i + 1, best_hi, v[i].target);
      if (t <= best_hi) {
        i = t;
        continue;
      }
      if (!v[i].conditional) {
        loop->path_complete = 0; /* leaves the loop for good */
        break;
      }
    }
    i++;
  }
  qsort(loop->ops, (size_t)loop->n_ops, sizeof loop->ops[0], by_path_then_name);
  uq__free(v);
  return 0;
}
