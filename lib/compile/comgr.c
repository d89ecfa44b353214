#include "lib/compile/comgr.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/dl.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/libs.h"
#include "lib/base/uq_config.h"

#if UQ_HAVE_COMGR_HEADERS

#include <amd_comgr.h>

#define COMGR_FUNCS(X)                                                         \
  X(amd_comgr_get_version)                                                     \
  X(amd_comgr_status_string)                                                   \
  X(amd_comgr_create_data)                                                     \
  X(amd_comgr_release_data)                                                    \
  X(amd_comgr_set_data)                                                        \
  X(amd_comgr_get_data_isa_name)                                               \
  X(amd_comgr_get_data_metadata)                                               \
  X(amd_comgr_destroy_metadata)                                                \
  X(amd_comgr_get_metadata_kind)                                               \
  X(amd_comgr_get_metadata_string)                                             \
  X(amd_comgr_metadata_lookup)                                                 \
  X(amd_comgr_get_metadata_list_size)                                          \
  X(amd_comgr_index_list_metadata)                                             \
  X(amd_comgr_create_disassembly_info)                                         \
  X(amd_comgr_destroy_disassembly_info)                                        \
  X(amd_comgr_disassemble_instruction)

typedef struct comgr_api {
#define X(f) __typeof__(f) *f;
  COMGR_FUNCS(X)
#undef X
} comgr_api;

/* Guards every comgr call (comgr 2.4 is not documented as thread-safe)
 * and the symbol cache below. */
static pthread_mutex_t comgr_lock = PTHREAD_MUTEX_INITIALIZER;
static void *cached_handle;
static comgr_api cached_api;

/* Called with comgr_lock held. The library is chosen per call (the override
 * variable is read each time); symbols are resolved once per library. */
static int comgr_load(const comgr_api **out) {
  void *h = NULL;
  int status = uq__libs_open(UQ__LIB_COMGR, UQ_ENOENT, &h);
  if (status != 0)
    return status;
  if (h != cached_handle) {
    comgr_api api;
#define X(f)                                                                   \
  status = uq__dl_sym(h, "libamd_comgr", #f, UQ_ENOENT, (void **)&api.f);      \
  if (status != 0)                                                             \
    return status;
    COMGR_FUNCS(X)
#undef X
    cached_api = api;
    cached_handle = h;
  }
  *out = &cached_api;
  return 0;
}

static int comgr_fail(const comgr_api *api, amd_comgr_status_t s,
                      const char *what) {
  const char *text = NULL;
  if (api->amd_comgr_status_string(s, &text) != AMD_COMGR_STATUS_SUCCESS ||
      text == NULL)
    text = "unknown status";
  return uq__errorf(UQ_EINVAL, "comgr: %s failed: %s (%d)", what, text,
                    (int)s);
}

/* A string node's text into buf; 0 when `node` is not a string or does not
 * fit. */
static int node_string(const comgr_api *api, amd_comgr_metadata_node_t node,
                       char *buf, size_t n) {
  amd_comgr_metadata_kind_t kind;
  size_t size = 0;
  if (api->amd_comgr_get_metadata_kind(node, &kind) !=
          AMD_COMGR_STATUS_SUCCESS ||
      kind != AMD_COMGR_METADATA_KIND_STRING ||
      api->amd_comgr_get_metadata_string(node, &size, NULL) !=
          AMD_COMGR_STATUS_SUCCESS ||
      size == 0 || size > n ||
      api->amd_comgr_get_metadata_string(node, &size, buf) !=
          AMD_COMGR_STATUS_SUCCESS)
    return 0;
  buf[size - 1] = '\0';
  return 1;
}

/* comgr renders every scalar as a string: a count is kept when it is a
 * whole decimal number in [0, INT32_MAX], like the ELF reader does. */
static int32_t lookup_count(const comgr_api *api,
                            amd_comgr_metadata_node_t map, const char *key) {
  amd_comgr_metadata_node_t value;
  if (api->amd_comgr_metadata_lookup(map, key, &value) !=
      AMD_COMGR_STATUS_SUCCESS)
    return -1;
  char text[32];
  int32_t result = -1;
  if (node_string(api, value, text, sizeof text)) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno == 0 && end != text && *end == '\0' && v >= 0 &&
        v <= INT32_MAX)
      result = (int32_t)v;
  }
  api->amd_comgr_destroy_metadata(value);
  return result;
}

static void lookup_target(const comgr_api *api, amd_comgr_metadata_node_t root,
                          char *buf, size_t n) {
  amd_comgr_metadata_node_t value;
  if (api->amd_comgr_metadata_lookup(root, "amdhsa.target", &value) !=
      AMD_COMGR_STATUS_SUCCESS)
    return;
  if (!node_string(api, value, buf, n))
    buf[0] = '\0';
  api->amd_comgr_destroy_metadata(value);
}

/* The object's ISA as comgr names it: its own reading of the ELF header
 * (comgr 2.4 manages that only for code object v4), else the metadata's
 * amdhsa.target. "" when neither is there. */
static void data_isa(const comgr_api *api, amd_comgr_data_t data,
                     amd_comgr_metadata_node_t root, char *buf, size_t n) {
  size_t size = n;
  buf[0] = '\0';
  if (api->amd_comgr_get_data_isa_name(data, &size, buf) ==
          AMD_COMGR_STATUS_SUCCESS &&
      size > 0 && size <= n) {
    buf[size - 1] = '\0';
    if (buf[0] != '\0')
      return;
  }
  buf[0] = '\0';
  lookup_target(api, root, buf, n);
}

/* Wraps obj in an executable data object. */
static int make_data(const comgr_api *api, const void *obj, size_t len,
                     amd_comgr_data_t *data, int *have) {
  amd_comgr_status_t s =
      api->amd_comgr_create_data(AMD_COMGR_DATA_KIND_EXECUTABLE, data);
  if (s != AMD_COMGR_STATUS_SUCCESS)
    return comgr_fail(api, s, "create_data");
  *have = 1;
  s = api->amd_comgr_set_data(*data, len, obj);
  if (s != AMD_COMGR_STATUS_SUCCESS)
    return comgr_fail(api, s, "set_data");
  return 0;
}

static int metadata_locked(const void *obj, size_t len, uq_code_info *info) {
  const comgr_api *api = NULL;
  amd_comgr_data_t data;
  amd_comgr_metadata_node_t root, kernels, kernel;
  int have_data = 0, have_root = 0, have_kernels = 0, have_kernel = 0;
  amd_comgr_status_t s;
  uq_code_info local = *info;

  int status = comgr_load(&api);
  if (status != 0)
    return status;
  status = make_data(api, obj, len, &data, &have_data);
  if (status != 0)
    goto cleanup;
  s = api->amd_comgr_get_data_metadata(data, &root);
  if (s != AMD_COMGR_STATUS_SUCCESS) {
    status = comgr_fail(api, s, "get_data_metadata");
    goto cleanup;
  }
  have_root = 1;
  s = api->amd_comgr_metadata_lookup(root, "amdhsa.kernels", &kernels);
  if (s != AMD_COMGR_STATUS_SUCCESS) {
    status = comgr_fail(api, s, "metadata lookup of amdhsa.kernels");
    goto cleanup;
  }
  have_kernels = 1;
  amd_comgr_metadata_kind_t kind;
  size_t count = 0;
  if (api->amd_comgr_get_metadata_kind(kernels, &kind) !=
          AMD_COMGR_STATUS_SUCCESS ||
      kind != AMD_COMGR_METADATA_KIND_LIST ||
      api->amd_comgr_get_metadata_list_size(kernels, &count) !=
          AMD_COMGR_STATUS_SUCCESS ||
      count == 0) {
    status = uq__errorf(UQ_EINVAL, "comgr: amdhsa.kernels is not a "
                                   "non-empty list");
    goto cleanup;
  }
  s = api->amd_comgr_index_list_metadata(kernels, 0, &kernel);
  if (s != AMD_COMGR_STATUS_SUCCESS) {
    status = comgr_fail(api, s, "index_list_metadata");
    goto cleanup;
  }
  have_kernel = 1;
  if (api->amd_comgr_get_metadata_kind(kernel, &kind) !=
          AMD_COMGR_STATUS_SUCCESS ||
      kind != AMD_COMGR_METADATA_KIND_MAP) {
    status = uq__errorf(UQ_EINVAL, "comgr: the first kernel is not a map");
    goto cleanup;
  }
  local.vgprs = lookup_count(api, kernel, ".vgpr_count");
  local.sgprs = lookup_count(api, kernel, ".sgpr_count");
  /* Absent before gfx90a (no accumulation registers there). */
  local.agprs = lookup_count(api, kernel, ".agpr_count");
  local.lds_bytes = lookup_count(api, kernel, ".group_segment_fixed_size");
  local.scratch_bytes =
      lookup_count(api, kernel, ".private_segment_fixed_size");
  local.registers = local.vgprs < 0    ? -1
                    : local.agprs >= 0 ? local.vgprs + local.agprs
                                       : local.vgprs;
  data_isa(api, data, root, local.isa, sizeof local.isa);
  *info = local;

cleanup:
  if (have_kernel)
    api->amd_comgr_destroy_metadata(kernel);
  if (have_kernels)
    api->amd_comgr_destroy_metadata(kernels);
  if (have_root)
    api->amd_comgr_destroy_metadata(root);
  if (have_data)
    api->amd_comgr_release_data(data);
  return status;
}

int uq__comgr_metadata(const void *obj, size_t len, uq_code_info *info) {
  if (obj == NULL || len == 0 || info == NULL)
    return uq__errorf(UQ_EINVAL, "comgr: no code object");
  pthread_mutex_lock(&comgr_lock);
  int status = metadata_locked(obj, len, info);
  pthread_mutex_unlock(&comgr_lock);
  return status;
}

/* ------------------------------------------------------------------ */
/* Disassembly goes instruction by instruction through
 * amd_comgr_disassemble_instruction, over the executable sections found by
 * a bounds-checked ELF walk here. comgr's whole-object action
 * (DISASSEMBLE_EXECUTABLE_TO_SOURCE) is not used: in 2.4 it runs
 * llvm-objdump's code, which calls exit() on a malformed object. */

#define SHT_PROGBITS_ 1
#define SHT_SYMTAB_ 2
#define SHF_EXECINSTR_ 4

typedef struct elf_view {
  const uint8_t *p;
  size_t len;
  uint64_t shoff;
  uint16_t shentsize, shnum, shstrndx;
} elf_view;

typedef struct sect {
  uint32_t name, type, link;
  uint64_t flags, addr, offset, size;
} sect;

static uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static int fits(size_t len, uint64_t off, uint64_t size) {
  return off <= len && size <= len - off;
}

static int view_open(const void *obj, size_t len, elf_view *e) {
  e->p = obj;
  e->len = len;
  if (len < 64 || memcmp(obj, "\x7f" "ELF", 4) != 0 || e->p[4] != 2 ||
      e->p[5] != 1)
    return 0;
  e->shoff = le(e->p + 40, 8);
  e->shentsize = (uint16_t)le(e->p + 58, 2);
  e->shnum = (uint16_t)le(e->p + 60, 2);
  e->shstrndx = (uint16_t)le(e->p + 62, 2);
  return e->shentsize >= 64 &&
         fits(len, e->shoff, (uint64_t)e->shnum * e->shentsize);
}

/* 0 when the section's contents are not inside the object. */
static int view_sect(const elf_view *e, unsigned i, sect *s) {
  if (i >= e->shnum)
    return 0;
  const uint8_t *h = e->p + e->shoff + (uint64_t)i * e->shentsize;
  s->name = (uint32_t)le(h, 4);
  s->type = (uint32_t)le(h + 4, 4);
  s->flags = le(h + 8, 8);
  s->addr = le(h + 16, 8);
  s->offset = le(h + 24, 8);
  s->size = le(h + 32, 8);
  s->link = (uint32_t)le(h + 40, 4);
  return fits(e->len, s->offset, s->size);
}

/* A NUL-terminated string at `off` of string section `i`, or NULL. */
static const char *view_str(const elf_view *e, unsigned i, uint64_t off) {
  sect s;
  if (!view_sect(e, i, &s) || off >= s.size)
    return NULL;
  const char *base = (const char *)e->p + s.offset;
  return memchr(base + off, '\0', s.size - off) != NULL ? base + off : NULL;
}

typedef struct dis_ctx {
  const elf_view *e;
  const uint8_t *code;
  uint64_t addr, size; /* the section being disassembled */
  uq__buf *text;
} dis_ctx;

static uint64_t read_memory(uint64_t from, char *to, uint64_t size,
                            void *user) {
  const dis_ctx *c = user;
  if (from < c->addr || from - c->addr >= c->size)
    return 0;
  uint64_t off = from - c->addr;
  uint64_t n = size < c->size - off ? size : c->size - off;
  memcpy(to, c->code + off, n);
  return n;
}

/* LLVM pads the text with blanks on both sides; one tab is kept. */
static void print_instruction(const char *instruction, void *user) {
  const dis_ctx *c = user;
  while (*instruction == ' ' || *instruction == '\t')
    instruction++;
  size_t n = strlen(instruction);
  while (n > 0 && (instruction[n - 1] == ' ' || instruction[n - 1] == '\t'))
    n--;
  uq__buf_printf(c->text, "\t%.*s", (int)n, instruction);
}

static void print_address(uint64_t address, void *user) {
  const dis_ctx *c = user;
  uq__buf_printf(c->text, " ; 0x%llx", (unsigned long long)address);
}

/* Labels: FUNC symbols of section `shndx` that start at `addr`. */
static void print_labels(const elf_view *e, unsigned shndx, uint64_t addr,
                         uq__buf *text) {
  for (unsigned i = 0; i < e->shnum; i++) {
    sect symtab;
    if (!view_sect(e, i, &symtab) || symtab.type != SHT_SYMTAB_)
      continue;
    for (uint64_t k = 0; (k + 1) * 24 <= symtab.size; k++) {
      const uint8_t *sym = e->p + symtab.offset + k * 24;
      if ((sym[4] & 0xf) != 2 /* FUNC */ || le(sym + 6, 2) != shndx ||
          le(sym + 8, 8) != addr)
        continue;
      const char *name = view_str(e, symtab.link, le(sym, 4));
      if (name != NULL)
        uq__buf_printf(text, "%s:\n", name);
    }
  }
}

static int disassemble_locked(const char *target, const void *obj, size_t len,
                              uq__buf *out) {
  const comgr_api *api = NULL;
  amd_comgr_data_t data;
  amd_comgr_metadata_node_t root;
  amd_comgr_disassembly_info_t dis;
  int have_data = 0, have_root = 0, have_dis = 0;
  amd_comgr_status_t s;
  char isa[128] = "";
  uq__buf text;
  elf_view e;

  uq__buf_init(&text);
  int status = comgr_load(&api);
  if (status != 0)
    return status;
  if (!view_open(obj, len, &e)) {
    status = uq__errorf(UQ_EINVAL, "comgr: not a well-formed 64-bit ELF");
    goto cleanup;
  }
  status = make_data(api, obj, len, &data, &have_data);
  if (status != 0)
    goto cleanup;
  if (api->amd_comgr_get_data_metadata(data, &root) ==
      AMD_COMGR_STATUS_SUCCESS)
    have_root = 1;
  if (have_root)
    data_isa(api, data, root, isa, sizeof isa);
  if (isa[0] == '\0' && target != NULL && target[0] != '\0')
    snprintf(isa, sizeof isa, "amdgcn-amd-amdhsa--%s", target);
  if (isa[0] == '\0') {
    status = uq__errorf(UQ_EINVAL, "comgr: cannot tell the object's ISA");
    goto cleanup;
  }
  /* Fails for processors comgr's LLVM does not know (gfx950 on 2.4). */
  s = api->amd_comgr_create_disassembly_info(isa, read_memory,
                                             print_instruction, print_address,
                                             &dis);
  if (s != AMD_COMGR_STATUS_SUCCESS) {
    status = uq__errorf(UQ_EINVAL, "comgr cannot disassemble for the ISA %s",
                        isa);
    goto cleanup;
  }
  have_dis = 1;
  int sections = 0;
  for (unsigned i = 0; i < e.shnum; i++) {
    sect sec;
    if (!view_sect(&e, i, &sec) || sec.type != SHT_PROGBITS_ ||
        !(sec.flags & SHF_EXECINSTR_) || sec.size == 0)
      continue;
    const char *name = view_str(&e, e.shstrndx, sec.name);
    uq__buf_printf(&text, "\nDisassembly of section %s:\n",
                   name != NULL ? name : "?");
    sections++;
    dis_ctx c = {&e, e.p + sec.offset, sec.addr, sec.size, &text};
    uint64_t off = 0;
    while (off < sec.size && text.status == 0) {
      print_labels(&e, i, sec.addr + off, &text);
      uint64_t size = 0;
      s = api->amd_comgr_disassemble_instruction(dis, sec.addr + off, &c,
                                                 &size);
      if (s != AMD_COMGR_STATUS_SUCCESS)
        uq__buf_puts(&text, "\t; (undecodable)");
      /* Never stall on a zero-size answer: instructions are 4-byte
       * multiples. */
      if (size == 0 || size > sec.size - off)
        size = sec.size - off < 4 ? sec.size - off : 4;
      uq__buf_printf(&text, " // %012llX:",
                     (unsigned long long)(sec.addr + off));
      for (uint64_t b = 0; b + 4 <= size; b += 4)
        uq__buf_printf(&text, " %08llX",
                       (unsigned long long)le(c.code + off + b, 4));
      uq__buf_puts(&text, "\n");
      off += size;
    }
  }
  if (sections == 0) {
    status = uq__errorf(UQ_EINVAL, "comgr: the object has no code section");
    goto cleanup;
  }
  if (text.status != 0) {
    status = uq__errorf(UQ_ENOMEM, "out of memory for the disassembly");
    goto cleanup;
  }
  uq__buf_append(out, text.data, text.len);
  if (out->status != 0)
    status = uq__errorf(UQ_ENOMEM, "out of memory for the disassembly");

cleanup:
  uq__buf_free(&text);
  if (have_dis)
    api->amd_comgr_destroy_disassembly_info(dis);
  if (have_root)
    api->amd_comgr_destroy_metadata(root);
  if (have_data)
    api->amd_comgr_release_data(data);
  return status;
}

int uq__comgr_disassemble(const char *target, const void *obj, size_t len,
                          uq__buf *out) {
  if (obj == NULL || len == 0 || out == NULL)
    return uq__errorf(UQ_EINVAL, "comgr: no code object");
  pthread_mutex_lock(&comgr_lock);
  int status = disassemble_locked(target, obj, len, out);
  pthread_mutex_unlock(&comgr_lock);
  return status;
}

void uq__comgr_identity(char *buf, size_t n) {
  const comgr_api *api = NULL;
  size_t major = 0, minor = 0;
  if (n == 0)
    return;
  buf[0] = '\0';
  pthread_mutex_lock(&comgr_lock);
  if (comgr_load(&api) == 0) {
    api->amd_comgr_get_version(&major, &minor);
    snprintf(buf, n, "comgr %zu.%zu", major, minor);
  }
  pthread_mutex_unlock(&comgr_lock);
}

#else /* !UQ_HAVE_COMGR_HEADERS */

int uq__comgr_metadata(const void *obj, size_t len, uq_code_info *info) {
  (void)obj;
  (void)len;
  (void)info;
  return uq__errorf(UQ_ENOENT, "comgr support was not built (no amd_comgr.h)");
}

int uq__comgr_disassemble(const char *target, const void *obj, size_t len,
                          uq__buf *out) {
  (void)target;
  (void)obj;
  (void)len;
  (void)out;
  return uq__errorf(UQ_ENOENT, "comgr support was not built (no amd_comgr.h)");
}

void uq__comgr_identity(char *buf, size_t n) {
  if (n > 0)
    buf[0] = '\0';
}

#endif
