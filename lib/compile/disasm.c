#include "lib/compile/disasm.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/base/alloc.h"
#include "lib/base/buf.h"
#include "lib/base/env.h"
#include "lib/base/error.h"
#include "lib/base/os.h"
#include "lib/compile/comgr.h"

#define EM_AMDGPU_ 224
#define EM_CUDA_ 190
#define SHT_SYMTAB_ 2
#define SHT_NOTE_ 7
#define NT_AMDGPU_METADATA_ 32

/* ------------------------------------------------------------------ */
/* A bounds-checked view of a 64-bit little-endian ELF. Everything is read
 * with memcpy: the object may come from a cache file and is not trusted to
 * be aligned or well formed. */

typedef struct elf {
  const uint8_t *p;
  size_t len;
  uint16_t machine;
  uint8_t abi_version;
  uint32_t flags;
  uint64_t shoff;
  uint16_t shentsize, shnum, shstrndx;
} elf;

typedef struct section {
  const char *name; /* "" when unnamed or out of bounds */
  uint32_t type, link;
  uint64_t offset, size;
  const uint8_t *data; /* NULL for NOBITS or out of bounds */
} section;

static uint16_t rd16(const uint8_t *p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v; /* the library builds only for little-endian hosts (x86_64) */
}
static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static int in_bounds(size_t len, uint64_t off, uint64_t size) {
  return off <= len && size <= len - off;
}

static int elf_open(const void *obj, size_t len, elf *e) {
  const uint8_t *p = obj;
  memset(e, 0, sizeof *e);
  if (obj == NULL || len < 64 || memcmp(p, "\x7f" "ELF", 4) != 0)
    return uq__errorf(UQ_EINVAL, "not an ELF code object (%zu bytes)", len);
  if (p[4] != 2 || p[5] != 1)
    return uq__errorf(UQ_EINVAL, "not a 64-bit little-endian ELF");
  e->p = p;
  e->len = len;
  e->abi_version = p[8];
  e->machine = rd16(p + 18);
  e->flags = rd32(p + 48);
  e->shoff = rd64(p + 40);
  e->shentsize = rd16(p + 58);
  e->shnum = rd16(p + 60);
  e->shstrndx = rd16(p + 62);
  if (e->machine != EM_AMDGPU_ && e->machine != EM_CUDA_)
    return uq__errorf(UQ_EINVAL, "ELF machine %u is neither AMDGPU nor CUDA",
                      e->machine);
  if (e->shnum != 0 &&
      (e->shentsize < 64 ||
       !in_bounds(len, e->shoff, (uint64_t)e->shnum * e->shentsize)))
    return uq__errorf(UQ_EINVAL, "truncated ELF: section headers out of bounds");
  return 0;
}

static void elf_section(const elf *e, unsigned i, section *s) {
  memset(s, 0, sizeof *s);
  s->name = "";
  if (i >= e->shnum)
    return;
  const uint8_t *h = e->p + e->shoff + (uint64_t)i * e->shentsize;
  s->type = rd32(h + 4);
  s->offset = rd64(h + 24);
  s->size = rd64(h + 32);
  s->link = rd32(h + 40);
  if (s->type != 8 /* NOBITS */ && in_bounds(e->len, s->offset, s->size))
    s->data = e->p + s->offset;
  if (e->shstrndx < e->shnum && e->shstrndx != i) {
    section strs;
    elf_section(e, e->shstrndx, &strs);
    uint32_t off = rd32(h);
    if (strs.data != NULL && off < strs.size &&
        memchr(strs.data + off, '\0', strs.size - off) != NULL)
      s->name = (const char *)strs.data + off;
  }
}

static int elf_find(const elf *e, const char *name, section *s) {
  for (unsigned i = 0; i < e->shnum; i++) {
    elf_section(e, i, s);
    if (strcmp(s->name, name) == 0)
      return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* A minimal msgpack reader for the AMDGPU metadata note: enough to find a
 * few keys and skip everything else. */

typedef struct mp {
  const uint8_t *p, *end;
  int bad;
} mp;

static uint64_t mp_be(mp *m, int n) {
  if (m->bad || m->end - m->p < n) {
    m->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = (v << 8) | m->p[i];
  m->p += n;
  return v;
}

static void mp_advance(mp *m, uint64_t n) {
  if (m->bad || (uint64_t)(m->end - m->p) < n) {
    m->bad = 1;
    return;
  }
  m->p += n;
}

enum { MP_INT, MP_STR, MP_MAP, MP_ARRAY, MP_OTHER };

/* Reads one header: kind, and for ints the value, for strings the bytes,
 * for containers the count; other kinds are skipped whole. */
typedef struct mp_val {
  int kind;
  int64_t i;
  const char *s;
  uint64_t n;
} mp_val;

static void mp_read(mp *m, mp_val *v) {
  memset(v, 0, sizeof *v);
  v->kind = MP_OTHER;
  uint8_t b = (uint8_t)mp_be(m, 1);
  if (m->bad)
    return;
  if (b <= 0x7f) {
    v->kind = MP_INT;
    v->i = b;
  } else if (b >= 0xe0) {
    v->kind = MP_INT;
    v->i = (int8_t)b;
  } else if ((b & 0xf0) == 0x80) {
    v->kind = MP_MAP;
    v->n = b & 0x0f;
  } else if ((b & 0xf0) == 0x90) {
    v->kind = MP_ARRAY;
    v->n = b & 0x0f;
  } else if ((b & 0xe0) == 0xa0 || b == 0xd9 || b == 0xda || b == 0xdb) {
    uint64_t n = (b & 0xe0) == 0xa0 ? (uint64_t)(b & 0x1f)
                 : b == 0xd9        ? mp_be(m, 1)
                 : b == 0xda        ? mp_be(m, 2)
                                    : mp_be(m, 4);
    v->kind = MP_STR;
    v->s = (const char *)m->p;
    v->n = n;
    mp_advance(m, n);
  } else {
    switch (b) {
    case 0xcc: case 0xcd: case 0xce: case 0xcf: {
      uint64_t u = mp_be(m, 1 << (b - 0xcc));
      v->kind = MP_INT;
      v->i = u > INT64_MAX ? INT64_MAX : (int64_t)u;
      break;
    }
    case 0xd0: v->kind = MP_INT; v->i = (int8_t)mp_be(m, 1); break;
    case 0xd1: v->kind = MP_INT; v->i = (int16_t)mp_be(m, 2); break;
    case 0xd2: v->kind = MP_INT; v->i = (int32_t)mp_be(m, 4); break;
    case 0xd3: v->kind = MP_INT; v->i = (int64_t)mp_be(m, 8); break;
    case 0xdc: v->kind = MP_ARRAY; v->n = mp_be(m, 2); break;
    case 0xdd: v->kind = MP_ARRAY; v->n = mp_be(m, 4); break;
    case 0xde: v->kind = MP_MAP; v->n = mp_be(m, 2); break;
    case 0xdf: v->kind = MP_MAP; v->n = mp_be(m, 4); break;
    case 0xc0: case 0xc2: case 0xc3: break;
    case 0xca: mp_advance(m, 4); break;
    case 0xcb: mp_advance(m, 8); break;
    case 0xc4: mp_advance(m, mp_be(m, 1)); break;
    case 0xc5: mp_advance(m, mp_be(m, 2)); break;
    case 0xc6: mp_advance(m, mp_be(m, 4)); break;
    case 0xd4: mp_advance(m, 2); break;
    case 0xd5: mp_advance(m, 3); break;
    case 0xd6: mp_advance(m, 5); break;
    case 0xd7: mp_advance(m, 9); break;
    case 0xd8: mp_advance(m, 17); break;
    case 0xc7: mp_advance(m, 1 + mp_be(m, 1)); break;
    case 0xc8: mp_advance(m, 1 + mp_be(m, 2)); break;
    case 0xc9: mp_advance(m, 1 + mp_be(m, 4)); break;
    default: m->bad = 1; break; /* 0xc1 is never used */
    }
  }
}

/* Skips the rest of a value whose header is `v`. Depth-limited: metadata
 * nests three or four levels; anything deeper is malformed. */
static void mp_skip_body(mp *m, const mp_val *v, int depth) {
  if (v->kind != MP_MAP && v->kind != MP_ARRAY)
    return;
  if (depth > 16) {
    m->bad = 1;
    return;
  }
  uint64_t items = v->kind == MP_MAP ? 2 * v->n : v->n;
  for (uint64_t i = 0; i < items && !m->bad; i++) {
    mp_val c;
    mp_read(m, &c);
    mp_skip_body(m, &c, depth + 1);
  }
}

static int mp_key_is(const mp_val *k, const char *s) {
  return k->kind == MP_STR && k->n == strlen(s) && memcmp(k->s, s, k->n) == 0;
}

static void amd_kernel_map(mp *m, uint64_t n, uq_code_info *info) {
  for (uint64_t i = 0; i < n && !m->bad; i++) {
    mp_val k, v;
    mp_read(m, &k);
    mp_read(m, &v);
    int32_t iv = v.kind == MP_INT && v.i >= 0 && v.i <= INT32_MAX
                     ? (int32_t)v.i
                     : -1;
    if (mp_key_is(&k, ".vgpr_count"))
      info->vgprs = iv;
    else if (mp_key_is(&k, ".sgpr_count"))
      info->sgprs = iv;
    else if (mp_key_is(&k, ".agpr_count"))
      info->agprs = iv;
    else if (mp_key_is(&k, ".group_segment_fixed_size"))
      info->lds_bytes = iv;
    else if (mp_key_is(&k, ".private_segment_fixed_size"))
      info->scratch_bytes = iv;
    mp_skip_body(m, &v, 1);
  }
}

static void amd_metadata(const uint8_t *p, size_t n, uq_code_info *info) {
  mp m = {p, p + n, 0};
  mp_val root;
  mp_read(&m, &root);
  if (root.kind != MP_MAP)
    return;
  for (uint64_t i = 0; i < root.n && !m.bad; i++) {
    mp_val k, v;
    mp_read(&m, &k);
    mp_read(&m, &v);
    if (mp_key_is(&k, "amdhsa.target") && v.kind == MP_STR) {
      size_t c = v.n < sizeof info->isa - 1 ? v.n : sizeof info->isa - 1;
      memcpy(info->isa, v.s, c);
      info->isa[c] = '\0';
    } else if (mp_key_is(&k, "amdhsa.kernels") && v.kind == MP_ARRAY &&
               v.n > 0) {
      mp_val kern;
      mp_read(&m, &kern);
      if (kern.kind == MP_MAP)
        amd_kernel_map(&m, kern.n, info);
      else
        mp_skip_body(&m, &kern, 2);
      for (uint64_t j = 1; j < v.n && !m.bad; j++) {
        mp_val rest;
        mp_read(&m, &rest);
        mp_skip_body(&m, &rest, 2);
      }
      continue;
    }
    mp_skip_body(&m, &v, 1);
  }
}

static void amd_info(const elf *e, uq_code_info *info) {
  for (unsigned i = 0; i < e->shnum; i++) {
    section s;
    elf_section(e, i, &s);
    if (s.type != SHT_NOTE_ || s.data == NULL)
      continue;
    uint64_t off = 0;
    while (off + 12 <= s.size) {
      uint32_t namesz = rd32(s.data + off), descsz = rd32(s.data + off + 4),
               type = rd32(s.data + off + 8);
      uint64_t name_off = off + 12;
      uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~3ull);
      uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~3ull);
      if (next > s.size)
        break;
      if (type == NT_AMDGPU_METADATA_ && namesz == 7 &&
          memcmp(s.data + name_off, "AMDGPU", 7) == 0) {
        amd_metadata(s.data + desc_off, descsz, info);
        if (info->vgprs >= 0 && info->agprs >= 0)
          info->registers = info->vgprs + info->agprs;
        else if (info->vgprs >= 0)
          info->registers = info->vgprs;
        return;
      }
      off = next;
    }
  }
}

/* ------------------------------------------------------------------ */
/* Cubins: per-function attributes live in .nv.info as (format, attribute)
 * records; the ones read here carry (symbol index, value). */

#define EIFMT_SVAL 0x04
#define EIATTR_FRAME_SIZE 0x11
#define EIATTR_REGCOUNT 0x2f

/* The flags hold only the number of an arch-specific target (sm_90a:
 * wgmma) or a family one (sm_100f). The toolkit note that ptxas writes,
 * under NVRTC too, keeps its command line: "-arch sm_90a" gives the letter
 * when its number agrees with the flags. */
static void nv_arch_suffix(const elf *e, int sm, uq_code_info *info) {
  section tk;
  if (sm <= 0 || !elf_find(e, ".note.nv.tkinfo", &tk) || tk.data == NULL)
    return;
  static const char opt[] = "-arch sm_";
  const char *p = memmem(tk.data, tk.size, opt, sizeof opt - 1);
  if (p == NULL)
    return;
  const char *end = (const char *)tk.data + tk.size;
  p += sizeof opt - 1;
  int n = 0;
  while (p < end && *p >= '0' && *p <= '9' && n < 10000)
    n = n * 10 + (*p++ - '0');
  if (n == sm && p < end && *p >= 'a' && *p <= 'z' &&
      (p + 1 == end || !(p[1] >= 'a' && p[1] <= 'z')))
    snprintf(info->isa, sizeof info->isa, "sm_%d%c", sm, *p);
}

static void nv_info(const elf *e, uq_code_info *info) {
  int sm = e->abi_version >= 8 ? (int)((e->flags >> 8) & 0xff)
                               : (int)(e->flags & 0xff);
  if (sm > 0)
    snprintf(info->isa, sizeof info->isa, "sm_%d", sm);
  nv_arch_suffix(e, sm, info);

  /* The first kernel: the first .text.<name> section. */
  const char *kernel = NULL;
  section s;
  for (unsigned i = 0; i < e->shnum && kernel == NULL; i++) {
    elf_section(e, i, &s);
    if (strncmp(s.name, ".text.", 6) == 0)
      kernel = s.name + 6;
  }
  if (kernel == NULL)
    return;
  char shared_name[300];
  snprintf(shared_name, sizeof shared_name, ".nv.shared.%s", kernel);
  info->lds_bytes = elf_find(e, shared_name, &s)
                        ? (s.size <= INT32_MAX ? (int32_t)s.size : -1)
                        : 0;

  /* The kernel's symbol index, to pick its records out of .nv.info. */
  int64_t sym_index = -1;
  for (unsigned i = 0; i < e->shnum && sym_index < 0; i++) {
    section symtab, strtab;
    elf_section(e, i, &symtab);
    if (symtab.type != SHT_SYMTAB_ || symtab.data == NULL)
      continue;
    elf_section(e, symtab.link, &strtab);
    if (strtab.data == NULL)
      continue;
    for (uint64_t k = 0; (k + 1) * 24 <= symtab.size; k++) {
      uint32_t off = rd32(symtab.data + k * 24);
      uint8_t st_type = symtab.data[k * 24 + 4] & 0xf;
      if (st_type == 2 /* FUNC */ && off < strtab.size &&
          memchr(strtab.data + off, '\0', strtab.size - off) != NULL &&
          strcmp((const char *)strtab.data + off, kernel) == 0) {
        sym_index = (int64_t)k;
        break;
      }
    }
  }
  if (!elf_find(e, ".nv.info", &s) || s.data == NULL)
    return;
  uint64_t off = 0;
  while (off + 4 <= s.size) {
    uint8_t fmt = s.data[off], attr = s.data[off + 1];
    uint64_t body = fmt == EIFMT_SVAL ? rd16(s.data + off + 2) : 0;
    if (off + 4 + body > s.size)
      break;
    if (fmt == EIFMT_SVAL && body >= 8) {
      uint32_t sym = rd32(s.data + off + 4), value = rd32(s.data + off + 8);
      int32_t v = value <= INT32_MAX ? (int32_t)value : -1;
      if (sym_index < 0 || sym == sym_index) {
        if (attr == EIATTR_REGCOUNT)
          info->registers = v;
        else if (attr == EIATTR_FRAME_SIZE)
          info->scratch_bytes = v;
      }
    }
    off += 4 + body;
  }
}

/* AMD: comgr first, the note reader when comgr is absent or refuses the
 * object (comgr's failure is not reported: the fallback answers). *by names
 * the reader that answered. The ELF header is checked first so that comgr
 * only sees objects that at least look like AMD code objects. */
static int code_info(const void *obj, size_t len, uq_code_info *info,
                     const char **by) {
  memset(info, 0, sizeof *info);
  info->vgprs = info->sgprs = info->agprs = info->registers = -1;
  info->lds_bytes = info->scratch_bytes = -1;
  elf e;
  int status = elf_open(obj, len, &e);
  if (status != 0)
    return status;
  if (e.machine == EM_AMDGPU_ && uq__comgr_metadata(obj, len, info) == 0) {
    *by = "comgr";
  } else if (e.machine == EM_AMDGPU_) {
    uq__error_clear();
    amd_info(&e, info);
    *by = "ELF note reader";
  } else {
    nv_info(&e, info);
    *by = "ELF .nv.info reader";
  }
  return 0;
}

int uq__code_info_from_object(const char *target, const void *obj, size_t len,
                              uq_code_info *info) {
  (void)target;
  const char *by;
  return code_info(obj, len, info, &by);
}

/* ------------------------------------------------------------------ */
/* Disassembly: external tools, fed the object through a private file. */

static const char *const amd_tools[] = {
    "llvm-objdump-22", "llvm-objdump", "/opt/rocm/llvm/bin/llvm-objdump", NULL};
static const char *const nv_tools[] = {
    "cuobjdump", "/usr/local/cuda/bin/cuobjdump", "nvdisasm",
    "/usr/local/cuda/bin/nvdisasm", NULL};

const char *const *uq__disasm_candidates(int amd) {
  return amd ? amd_tools : nv_tools;
}

/* "a, b, c" of a candidate list, for messages. */
static void join_names(const char *const *names, char *out, size_t n) {
  size_t at = 0;
  out[0] = '\0';
  for (size_t i = 0; names[i] != NULL && at < n; i++) {
    int w = snprintf(out + at, n - at, "%s%s", i > 0 ? ", " : "", names[i]);
    if (w < 0)
      break;
    at += (size_t)w;
  }
}

static int find_disassembler(int amd, char *path, size_t n) {
  char tried[512];
  if (amd) {
    const char *forced = uq__env_get(UQ__ENV_OBJDUMP);
    if (forced != NULL) {
      if (uq__os_find_program(forced, path, n) == 0)
        return 0;
      return uq__errorf(UQ_ENOENT, "no disassembler: %s=%s is not an "
                        "executable file", uq__env_name(UQ__ENV_OBJDUMP),
                        forced);
    }
  }
  const char *const *tools = uq__disasm_candidates(amd);
  for (size_t i = 0; tools[i] != NULL; i++)
    if (uq__os_find_program(tools[i], path, n) == 0)
      return 0;
  join_names(tools, tried, sizeof tried);
  if (amd)
    return uq__errorf(UQ_ENOENT,
                      "no AMD disassembler: looked for %s (bare names on "
                      "PATH); set %s to one",
                      tried, uq__env_name(UQ__ENV_OBJDUMP));
  return uq__errorf(UQ_ENOENT,
                    "no NVIDIA disassembler: looked for %s (bare names on "
                    "PATH)",
                    tried);
}

/* The disassembler's command line for `file` (argv has room for 6). On
 * AMD the processor is named in the object; --mcpu (written into mcpu)
 * only matters for tools too old to read it, and then it must be the bare
 * processor. */
static void tool_argv(char *tool, int amd, const char *isa, const char *target,
                      char *file, char *mcpu, size_t mcpu_n, char *argv[6]) {
  const char *base = strrchr(tool, '/');
  base = base != NULL ? base + 1 : tool;
  int argc = 0;
  argv[argc++] = tool;
  if (amd) {
    const char *proc = strrchr(isa, '-');
    const char *arch = proc != NULL ? proc + 1
                       : target != NULL ? target
                                        : "";
    size_t k = strcspn(arch, ":");
    snprintf(mcpu, mcpu_n, "--mcpu=%.*s", (int)k, arch);
    argv[argc++] = "-d";
    if (k > 0)
      argv[argc++] = mcpu;
  } else if (strstr(base, "cuobjdump") != NULL) {
    argv[argc++] = "-sass";
  }
  argv[argc++] = file;
  argv[argc] = NULL;
}

int uq_code_disassemble(const char *target, const void *obj, size_t len,
                        char **text, uq_code_info *info) {
  uq__error_clear();
  int status = 0;
  uq__os_scratch dir = {"", -1};
  char file[PATH_MAX + 16], tool[PATH_MAX];
  char mcpu[96];
  char *out = NULL, *err = NULL;
  int exit_code = 0;
  uq_code_info local;
  const char *info_by = "";
  uq__buf head;

  uq__buf_init(&head);
  if (text == NULL)
    return uq__errorf(UQ_EINVAL, "uq_code_disassemble: text is NULL");
  *text = NULL;
  status = code_info(obj, len, &local, &info_by);
  if (status != 0)
    return status;
  elf e;
  status = elf_open(obj, len, &e);
  if (status != 0)
    return status;
  int amd = e.machine == EM_AMDGPU_;
  if (amd) {
    /* comgr first; llvm-objdump when it is absent or cannot (an ISA newer
     * than its LLVM), which is not an error of this call. */
    uq__buf dis;
    uq__buf_init(&dis);
    if (uq__comgr_disassemble(target, obj, len, &dis) == 0) {
      char ident[64];
      uq__comgr_identity(ident, sizeof ident);
      uq__buf_printf(&head, "; uqjit: resources read by %s, disassembly by "
                     "%s\n", info_by, ident[0] != '\0' ? ident : "comgr");
      uq__buf_append(&head, dis.data, dis.len);
      uq__buf_free(&dis);
      goto finish;
    }
    uq__buf_free(&dis);
    uq__error_clear();
  }
  status = find_disassembler(amd, tool, sizeof tool);
  if (status != 0)
    goto cleanup;
  status = uq__os_scratch_make(&dir);
  if (status != 0)
    goto cleanup;
  snprintf(file, sizeof file, "%s/%s", dir.path,
           amd ? "code.co" : "code.cubin");
  status = uq__os_write_file(file, obj, len);
  if (status != 0)
    goto cleanup;

  char *argv[6];
  tool_argv(tool, amd, local.isa, target, file, mcpu, sizeof mcpu, argv);
  status = uq__os_run(argv, NULL, &out, NULL, &err, &exit_code);
  if (status != 0)
    goto cleanup;
  if (exit_code != 0) {
    status = uq__errorf(UQ_EIO, "%s failed (exit %d):\n", tool, exit_code);
    uq__error_append(err);
    goto cleanup;
  }
  if (amd)
    uq__buf_printf(&head, "; uqjit: resources read by %s, disassembly by "
                   "%s\n", info_by, tool);
  uq__buf_puts(&head, out);
finish:
  *text = uq__buf_take(&head, NULL);
  if (*text == NULL) {
    status = uq__errorf(UQ_ENOMEM, "out of memory for the disassembly");
    goto cleanup;
  }
  if (info != NULL)
    *info = local;
cleanup:
  uq__buf_free(&head);
  uq__os_scratch_remove(&dir);
  uq__free(out);
  uq__free(err);
  return status;
}

int uq__disasm_lines(const char *text, size_t size,
                     int (*parse)(const char *line, size_t n, void *slot), void **out,
                     size_t *count, const char *what) {
  size_t cap = 256, n = 0;
  unsigned char *v = uq__malloc(cap * size);
  if (v == NULL)
    return uq__errorf(UQ_ENOMEM, "out of memory for %s", what);
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
    if (n == cap) {
      unsigned char *w = uq__realloc(v, 2 * cap * size);
      if (w == NULL) {
        uq__free(v);
        return uq__errorf(UQ_ENOMEM, "out of memory for %s", what);
      }
      v = w;
      cap *= 2;
    }
    if (parse(p, len, v + n * size))
      n++;
    p += len + (e != NULL);
  }
  *out = v;
  *count = n;
  return 0;
}
