/* uqjit dump: the generated source of a shape's kernels (or of named keys),
 * and with --isa the compiled code object's disassembly and resources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cmd_util.h"
#include "cli/commands.h"
#include "uqjit_tools.h"

#define CMD "dump"
#define NAME_LEN 512
#define MAX_KEYS 16

static void dump_usage(FILE *out) {
  fprintf(out,
          "usage: uqjit dump <shape options> [--kind K] [--isa] [options]\n"
          "       uqjit dump --key NAME [--key NAME ...] [--isa] [options]\n\n"
          "Prints the generated source of each kernel of a shape's plan (or "
          "of the\n"
          "named keys, as `uqjit plan` spells them). With --isa it also "
          "compiles\n"
          "each kernel (no GPU needed; the on-disk cache is used) and prints "
          "the\n"
          "disassembly and the resource usage (VGPR/SGPR/AGPR or registers, "
          "LDS /\n"
          "shared memory, scratch); for AMD decode kernels also the "
          "instruction\n"
          "mix per 16-token tile by class (vmem, lds, mfma, valu, salu, "
          "smem, wait,\n"
          "branch: static counts of the outermost loop's body, found by its "
          "backward\n"
          "branch, over the 16 tiles of a tile group when that body has no "
          "inner\n"
          "loop) and the occupancy the resources allow on CDNA (waves per "
          "SIMD and\n"
          "per CU); for NVIDIA decode kernels the chunk loop's static counts "
          "by\n"
          "opcode (the narrowest loop holding every tensor-core instruction: "
          "its body,\n"
          "and its fast path, every forward branch inside it taken), with warp\n"
          "instructions per token and kv head for the warpgroup layer. "
          "Without a\n"
          "disassembler the source and the resource usage are still printed, "
          "with a\n"
          "note on stderr.\n\n"
          "shape options:\n");
  cli_shape_help(out);
  fprintf(out,
          "\nother options:\n"
          "  --key NAME                 a kernel key name (repeatable); "
          "replaces the\n"
          "                             shape options (--target then "
          "overrides its target)\n"
          "  --kind K                   decode, reduce, prologue, store or "
          "all\n"
          "                             (default all: the plan's kernels)\n"
          "  --isa                      compile, then print disassembly and "
          "resources\n"
          "  --no-source                with --isa: skip the source\n"
          "  --json                     with --isa: a JSON array, one object "
          "per kernel\n"
          "                             (resources, occupancy, instruction "
          "mix or\n"
          "                             chunk loop), nothing else\n"
          "  --cache-dir D              cache directory for --isa (default: "
          "UQJIT_CACHE_DIR,\n"
          "                             XDG_CACHE_HOME/uqjit, "
          "~/.cache/uqjit)\n"
          "  -h, --help                 this help\n");
}

static void print_count(const char *label, int32_t v, const char *unit) {
  if (v < 0)
    printf("  %-10s unknown\n", label);
  else
    printf("  %-10s %d%s\n", label, (int)v, unit);
}

/* The disassembler may read more metadata than the loader did. */
static void merge_info(uq_code_info *dst, const uq_code_info *src) {
  if (!dst->isa[0] && src->isa[0])
    snprintf(dst->isa, sizeof dst->isa, "%s", src->isa);
  if (!dst->compiler[0] && src->compiler[0])
    snprintf(dst->compiler, sizeof dst->compiler, "%s", src->compiler);
#define TAKE(f)                                                             \
  if (dst->f < 0 && src->f >= 0)                                            \
    dst->f = src->f;
  TAKE(vgprs) TAKE(sgprs) TAKE(agprs) TAKE(registers) TAKE(lds_bytes)
  TAKE(scratch_bytes)
#undef TAKE
}

static int is_nvidia(const char *target) {
  return strncmp(target, "sm_", 3) == 0;
}

static void print_resources(const char *target, const uq_code_info *info,
                            size_t object_len) {
  printf("// ---- resource usage ----\n");
  printf("  %-10s %s\n", "isa", info->isa[0] ? info->isa : target);
  printf("  %-10s %s\n", "compiler",
         info->compiler[0] ? info->compiler : "unknown");
  printf("  %-10s %zu bytes\n", "object", object_len);
  if (is_nvidia(target)) {
    print_count("registers", info->registers, " per thread");
  } else {
    print_count("VGPRs", info->vgprs, "");
    print_count("SGPRs", info->sgprs, "");
    print_count("AGPRs", info->agprs, "");
    if (info->registers >= 0)
      print_count("registers", info->registers, "");
  }
  print_count(is_nvidia(target) ? "shared" : "LDS", info->lds_bytes,
              " bytes");
  print_count("scratch", info->scratch_bytes,
              is_nvidia(target) ? " bytes per thread" : " bytes per lane");
}

/* ---- --isa on AMD decode kernels: instruction mix and occupancy ---- */

/* Per-CU limits of the CDNA targets (LLVM AMDGPUUsage, "Processors" and the
 * COMPUTE_PGM_RSRC granularities; AMD CDNA3 ISA guide section 3 and the
 * CDNA4 whitepaper): 4 SIMDs per CU, at most 8 waves per SIMD, 512 VGPRs
 * (arch + acc, unified) per lane per SIMD allocated in granules of 8, and
 * LDS 64 KiB per CU in 512-byte granules (gfx90a, gfx942) or 160 KiB in
 * 1280-byte granules (gfx950). */
typedef struct cdna_limits {
  int lds_per_cu, lds_granule;
} cdna_limits;

static int cdna_limits_of(const char *target, cdna_limits *l) {
  if (strncmp(target, "gfx950", 6) == 0) {
    l->lds_per_cu = 160 * 1024;
    l->lds_granule = 1280;
    return 0;
  }
  if (strncmp(target, "gfx942", 6) == 0 || strncmp(target, "gfx90a", 6) == 0) {
    l->lds_per_cu = 64 * 1024;
    l->lds_granule = 512;
    return 0;
  }
  return -1;
}

typedef struct occupancy {
  int known;
  int vgpr_alloc;        /* arch rounded to 4, + acc, rounded to 8 */
  int waves_simd_vgpr;   /* waves per SIMD the registers allow (max 8) */
  int wg_cu_lds;         /* workgroups per CU the LDS allows (-1: no limit) */
  int waves_cu;          /* one wave64 per workgroup: min of the two */
} occupancy;

static int round_up(int v, int g) { return (v + g - 1) / g * g; }

static occupancy occupancy_of(const char *target, const uq_code_info *info) {
  occupancy o = {0, -1, -1, -1, -1};
  cdna_limits l;
  if (cdna_limits_of(target, &l) != 0 || info->vgprs < 0 || info->agprs < 0 ||
      info->lds_bytes < 0)
    return o;
  o.known = 1;
  o.vgpr_alloc = round_up(round_up(info->vgprs, 4) + info->agprs, 8);
  if (o.vgpr_alloc < 8)
    o.vgpr_alloc = 8;
  o.waves_simd_vgpr = 512 / o.vgpr_alloc < 8 ? 512 / o.vgpr_alloc : 8;
  o.waves_cu = 4 * o.waves_simd_vgpr;
  if (info->lds_bytes > 0) {
    o.wg_cu_lds = l.lds_per_cu / round_up(info->lds_bytes, l.lds_granule);
    if (o.wg_cu_lds < o.waves_cu)
      o.waves_cu = o.wg_cu_lds;
  }
  return o;
}

/* Instructions per 16-token tile: the outermost loop's body (the tile-group
 * loop of the strided schedule) over its 16 tiles when it has no inner
 * loop (the group unrolled, as the gfx950 layer does); with inner loops the
 * body holds one tile's code once (divisor 1); without a loop, the whole
 * kernel over 16 (one tile group). */
typedef struct tile_mix {
  const int32_t *counts;
  int divisor;
  const char *method;
} tile_mix;

static tile_mix tile_mix_of(const uq_isa_mix *m) {
  tile_mix t;
  if (m->loop_found && m->inner_loops == 0) {
    t.counts = m->loop;
    t.divisor = 16;
    t.method = "outermost loop body (backward branch) / 16 tiles per tile group";
  } else if (m->loop_found) {
    t.counts = m->loop;
    t.divisor = 1;
    t.method = "outermost loop body (backward branch), inner loops counted "
               "once: static count per tile";
  } else {
    t.counts = m->kernel;
    t.divisor = 16;
    t.method = "no loop found: whole kernel / 16 tiles";
  }
  return t;
}

static void print_isa_mix(const char *target, const char *text,
                          const uq_code_info *info) {
  uq_isa_mix m;
  if (uq_code_isa_mix(text, &m) != 0) {
    printf("// ---- instruction mix: unavailable (%s) ----\n", uq_last_error());
    return;
  }
  tile_mix t = tile_mix_of(&m);
  printf("// ---- instruction mix per 16-token tile (static counts) ----\n");
  printf("  method     %s\n", t.method);
  if (m.loop_found)
    printf("  loop       0x%llx .. 0x%llx, %d inner loop(s)\n",
           (unsigned long long)m.loop_begin, (unsigned long long)m.loop_end,
           (int)m.inner_loops);
  int32_t total = 0, ktotal = 0;
  for (int c = 0; c < UQ_ISA_CLASSES; c++) {
    printf("  %-10s %8.2f   (kernel %d)\n", uq_isa_class_name(c),
           (double)t.counts[c] / t.divisor, (int)m.kernel[c]);
    total += t.counts[c];
    ktotal += m.kernel[c];
  }
  printf("  %-10s %8.2f   (kernel %d)\n", "total", (double)total / t.divisor,
         (int)ktotal);
  occupancy o = occupancy_of(target, info);
  if (!o.known) {
    printf("  occupancy  unknown (no CDNA limits for %s or missing "
           "metadata)\n", target);
    return;
  }
  printf("  occupancy  %d VGPRs allocated (arch + acc): %d waves/SIMD; ",
         o.vgpr_alloc, o.waves_simd_vgpr);
  if (o.wg_cu_lds < 0)
    printf("no LDS; ");
  else
    printf("LDS allows %d workgroups/CU; ", o.wg_cu_lds);
  printf("%d waves/CU (one wave64 a workgroup)\n", o.waves_cu);
}

/* ---- --isa on NVIDIA decode kernels: the chunk loop ---- */

/* Warp instructions per token and kv head on the fast path where the
 * layer's split is known: the warpgroup layer's four warps share a
 * 64-token chunk, so a warp's pass stands for 16 tokens; -1 elsewhere. */
static double sass_per_token(const uq_key *key, const uq_sass_loop *l) {
  if (key->variant != UQ_VARIANT_WARPGROUP || !l->path_complete)
    return -1;
  return (double)l->path_total / 16.0;
}

static void print_sass_loop(const uq_key *key, const char *text) {
  uq_sass_loop l;
  if (uq_code_sass_loop(text, &l) != 0) {
    printf("// ---- chunk loop: unavailable (%s) ----\n", uq_last_error());
    return;
  }
  printf("// ---- chunk loop (static SASS counts, per warp and pass) ----\n");
  if (!l.found) {
    printf("  loop       none (no backward branch)\n");
    return;
  }
  printf("  loop       0x%llx .. 0x%llx: %d instructions\n", (unsigned long long)l.begin,
         (unsigned long long)l.end, (int)l.body_total);
  printf("  fast path  %d instructions%s (every forward branch inside the loop "
         "taken)\n",
         (int)l.path_total, l.path_complete ? "" : " up to a branch out of the loop");
  double t = sass_per_token(key, &l);
  if (t >= 0)
    printf("  per token  %.1f warp instructions per token and kv head on the fast "
           "path (a warp's 16 tokens of a 64-token chunk)\n",
           t);
  printf("  opcodes    fast path (loop body):");
  for (int i = 0; i < l.n_ops; i++)
    printf("%s %s %d (%d)", i % 6 == 0 ? (i ? "\n            " : "") : ",", l.ops[i].name,
           (int)l.ops[i].path, (int)l.ops[i].body);
  if (l.other_body > 0)
    printf(", others %d (%d)", (int)l.other_path, (int)l.other_body);
  printf("\n");
}

static void print_sass_loop_json(const uq_key *key, const char *text) {
  uq_sass_loop l;
  if (uq_code_sass_loop(text, &l) != 0 || !l.found)
    return;
  printf(", \"loop\": {\"begin\": %llu, \"end\": %llu, \"body\": %d, \"path\": %d, "
         "\"path_complete\": %s",
         (unsigned long long)l.begin, (unsigned long long)l.end, (int)l.body_total,
         (int)l.path_total, l.path_complete ? "true" : "false");
  double t = sass_per_token(key, &l);
  if (t >= 0)
    printf(", \"path_per_token\": %.4f", t);
  else
    printf(", \"path_per_token\": null");
  printf(", \"ops\": {");
  for (int i = 0; i < l.n_ops; i++)
    printf("%s\"%s\": [%d, %d]", i ? ", " : "", l.ops[i].name, (int)l.ops[i].path,
           (int)l.ops[i].body);
  printf("}}");
}

/* One kernel as a JSON object (dump --isa --json). */
static void print_isa_json(const char *name, const uq_key *key,
                           const char *text, const uq_code_info *info,
                           int first) {
  printf("%s{\"name\": \"%s\", \"kind\": \"%s\", \"target\": \"%s\", "
         "\"isa\": \"%s\", \"vgprs\": %d, \"agprs\": %d, \"sgprs\": %d, "
         "\"lds_bytes\": %d, \"scratch_bytes\": %d",
         first ? "" : ",\n", name, cli_kind_name(key->kind), key->target,
         info->isa, (int)info->vgprs, (int)info->agprs, (int)info->sgprs,
         (int)info->lds_bytes, (int)info->scratch_bytes);
  occupancy o = occupancy_of(key->target, info);
  if (o.known)
    printf(", \"vgpr_alloc\": %d, \"waves_per_simd_vgpr\": %d, "
           "\"workgroups_per_cu_lds\": %d, \"waves_per_cu\": %d",
           o.vgpr_alloc, o.waves_simd_vgpr, o.wg_cu_lds, o.waves_cu);
  uq_isa_mix m;
  if (text != NULL && !is_nvidia(key->target) && uq_code_isa_mix(text, &m) == 0) {
    tile_mix t = tile_mix_of(&m);
    printf(", \"mix_method\": \"%s\", \"mix_divisor\": %d, \"per_tile\": {",
           t.method, t.divisor);
    for (int c = 0; c < UQ_ISA_CLASSES; c++)
      printf("%s\"%s\": %.4f", c ? ", " : "", uq_isa_class_name(c),
             (double)t.counts[c] / t.divisor);
    printf("}, \"kernel\": {");
    for (int c = 0; c < UQ_ISA_CLASSES; c++)
      printf("%s\"%s\": %d", c ? ", " : "", uq_isa_class_name(c),
             (int)m.kernel[c]);
    printf("}");
  }
  if (text != NULL && is_nvidia(key->target) && key->kind == UQ_KERNEL_DECODE)
    print_sass_loop_json(key, text);
  printf("}");
}

typedef struct dump_state {
  const char *cache_dir;
  uq_context *ctx;
  char ctx_target[UQ_TARGET_MAX];
  int warned_no_disasm;
  int json;    /* --json: one object per kernel, no source or text */
  int printed; /* JSON objects printed so far */
} dump_state;

static int ensure_context(dump_state *st, const char *target) {
  if (st->ctx != NULL && strcmp(st->ctx_target, target) == 0)
    return 0;
  uq_context_destroy(st->ctx);
  st->ctx = NULL;
  int rc = cli_compile_context(target, st->cache_dir, &st->ctx);
  if (rc != 0)
    return rc;
  snprintf(st->ctx_target, sizeof st->ctx_target, "%s", target);
  return 0;
}

static int dump_isa(dump_state *st, const uq_key *key, const char *name) {
  int rc = ensure_context(st, key->target);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot create a compile context");
  void *obj = NULL;
  size_t len = 0;
  uq_code_info info;
  rc = uq_code_object(st->ctx, key, &obj, &len, &info);
  if (rc != 0) {
    char what[NAME_LEN + 32];
    snprintf(what, sizeof what, "cannot compile %s", name);
    return cli_fail(CMD, rc, what);
  }
  char *text = NULL;
  uq_code_info dis;
  memset(&dis, 0, sizeof dis);
  dis.vgprs = dis.sgprs = dis.agprs = dis.registers = -1;
  dis.lds_bytes = dis.scratch_bytes = -1;
  rc = uq_code_disassemble(key->target, obj, len, &text, &dis);
  int code = CLI_EXIT_OK;
  if (rc == 0) {
    merge_info(&info, &dis);
  } else if (rc == UQ_ENOENT) {
    if (!st->warned_no_disasm)
      fprintf(stderr,
              "uqjit dump: no disassembler found for %s (%s); printing the "
              "source and resource usage only\n",
              key->target, uq_last_error());
    st->warned_no_disasm = 1;
  } else {
    code = cli_fail(CMD, rc, "cannot disassemble");
  }
  if (st->json) {
    print_isa_json(name, key, text, &info, st->printed++ == 0);
  } else {
    if (text != NULL) {
      printf("// ---- disassembly of %s ----\n", name);
      fputs(text, stdout);
      if (text[0] && text[strlen(text) - 1] != '\n')
        putchar('\n');
    }
    print_resources(key->target, &info, len);
    if (text != NULL && !is_nvidia(key->target) &&
        key->kind == UQ_KERNEL_DECODE)
      print_isa_mix(key->target, text, &info);
    if (text != NULL && is_nvidia(key->target) && key->kind == UQ_KERNEL_DECODE)
      print_sass_loop(key, text);
  }
  uq_free(text);
  uq_free(obj);
  return code;
}

static int kind_from_name(const char *s, uint32_t *kind) {
  static const char *const names[] = {"all", "decode", "reduce", "prologue",
                                      "store"};
  for (uint32_t i = 0; i < 5; i++)
    if (strcmp(s, names[i]) == 0) {
      *kind = i; /* 0 = all; the rest equal uq_kernel_kind */
      return 0;
    }
  return -1;
}

/* ---- parse ---- */

typedef struct dump_options {
  cli_shape in;
  const char *key_names[MAX_KEYS]; /* --key, in order */
  size_t nkey_names;
  const char *target;    /* --target canonical, for the shape or the keys */
  char target_canon[UQ_TARGET_MAX];
  const char *cache_dir; /* --cache-dir, or NULL */
  const char *kind_text; /* --kind, or NULL */
  uint32_t kind;         /* 0 = all; else a uq_kernel_kind */
  int isa, no_source, json;
} dump_options;

/* --target and --key. CLI_NEXT when argv[*i] was taken, 0 when it is
 * neither, else the exit status (a usage error, so 0 is free). --target is
 * read here, not by the shape flags, so that it can go with --key as
 * well. */
static int dump_parse_own(dump_options *o, int argc, char **argv, int *i) {
  const char *v;
  int r;
  if ((r = cli_option(CMD, argc, argv, i, "--target", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    if (o->target != NULL)
      return cli_usage_error(CMD, "option '--target' given twice");
    if (uq_target_canonical(v, o->target_canon, sizeof o->target_canon) !=
        0)
      return cli_usage_error(CMD, "--target: %s", uq_last_error());
    o->target = o->target_canon;
    return CLI_NEXT;
  }
  if ((r = cli_option(CMD, argc, argv, i, "--key", &v)) != 0) {
    if (r < 0)
      return CLI_EXIT_USAGE;
    if (o->nkey_names == MAX_KEYS)
      return cli_usage_error(CMD, "at most %d --key options", MAX_KEYS);
    o->key_names[o->nkey_names++] = v;
    return CLI_NEXT;
  }
  return 0;
}

/* The checks once every argument is read. */
static int dump_parse_finish(dump_options *o) {
  if (o->kind_text != NULL && kind_from_name(o->kind_text, &o->kind) != 0)
    return cli_usage_error(
        CMD, "--kind: '%s' is not decode, reduce, prologue, store or all",
        o->kind_text);
  if (o->no_source && !o->isa)
    return cli_usage_error(CMD, "--no-source needs --isa");
  if (o->json && !o->isa)
    return cli_usage_error(CMD, "--json needs --isa");
  if (o->nkey_names > 0) {
    if (o->in.seen != 0)
      return cli_usage_error(CMD, "--key replaces the shape options");
    if (o->kind_text != NULL)
      return cli_usage_error(CMD, "--key names its own kind: drop --kind");
  } else if (cli_shape_finish(CMD, &o->in) != 0) {
    return CLI_EXIT_USAGE;
  }
  return CLI_NEXT;
}

/* argv -> *o. CLI_NEXT when the command should run; otherwise the exit
 * status (help printed, or a usage error printed). */
static int dump_parse(int argc, char **argv, dump_options *o) {
  memset(o, 0, sizeof *o);
  cli_shape_init(&o->in);
  const cli_flag flags[] = {
      {"--isa", &o->isa, 1},
      {"--no-source", &o->no_source, 1},
      {"--json", &o->json, 1},
      {NULL, NULL, 0},
  };
  const cli_text texts[] = {{"--kind", &o->kind_text},
                            {"--cache-dir", &o->cache_dir},
                            {NULL, NULL}};
  for (int i = 1; i < argc; i++) {
    int r = dump_parse_own(o, argc, argv, &i);
    if (r == 0)
      r = cli_shape_command_arg(CMD, &o->in, texts, flags, dump_usage, argc,
                                argv, &i);
    if (r != CLI_NEXT)
      return r;
  }
  return dump_parse_finish(o);
}

/* ---- run: the keys to dump ---- */

/* The --key names, parsed, each with --target's target when given. */
static int keys_from_names(const dump_options *o, uq_key *keys,
                           size_t *nkeys) {
  for (size_t k = 0; k < o->nkey_names; k++) {
    int rc = uq_key_parse(o->key_names[k], &keys[*nkeys]);
    if (rc != 0)
      return cli_usage_error(CMD, "--key: %s", uq_last_error());
    if (o->target != NULL) {
      memset(keys[*nkeys].target, 0, sizeof keys[*nkeys].target);
      snprintf(keys[*nkeys].target, sizeof keys[*nkeys].target, "%s",
               o->target);
    }
    *nkeys += 1;
  }
  return CLI_EXIT_OK;
}

/* The shape's plan kernels of --kind (all by default), or its store
 * kernel. */
static int keys_from_plan(const dump_options *o, uq_key *keys,
                          size_t *nkeys) {
  uq_plan plan;
  int rc = uq_plan_make_variant(&o->in.shape, o->target, o->in.variant,
                                &plan);
  if (rc != 0)
    return cli_fail(CMD, rc, "cannot plan this shape");
  if (!plan.eligible) {
    fprintf(stderr, "uqjit dump: the shape is not eligible: %s\n",
            plan.reason);
    return CLI_EXIT_FAILURE;
  }
  if (o->kind == UQ_KERNEL_STORE) {
    rc = uq_store_key(o->in.shape.head_dim, o->in.shape.num_kv_heads,
                      plan.padded_slot, o->in.shape.q_dtype,
                      plan.kernels[0].target, &keys[*nkeys]);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot make the store key");
    *nkeys += 1;
    return CLI_EXIT_OK;
  }
  for (int k = 0; k < plan.num_kernels; k++)
    if (o->kind == 0 || plan.kernels[k].kind == o->kind)
      keys[(*nkeys)++] = plan.kernels[k];
  if (*nkeys == 0) {
    fprintf(stderr,
            "uqjit dump: the plan has no %s kernel (the query rotation "
            "is fused into the decode kernel)\n",
            o->kind_text);
    return CLI_EXIT_FAILURE;
  }
  return CLI_EXIT_OK;
}

/* ---- print: each kernel's source, then with --isa its code ---- */

/* Kernel number k: its header line, source and (with --isa) disassembly
 * and resources. Compiling happens here, one kernel at a time, so that
 * what came before a failure is already out. */
static int dump_kernel(const dump_options *o, dump_state *st,
                       const uq_key *key, size_t k) {
  char name[NAME_LEN];
  int len = uq_key_name(key, name, sizeof name);
  if (len < 0)
    return cli_fail(CMD, len, "cannot name a kernel");
  if (o->json)
    return dump_isa(st, key, name);
  printf("%s// ==== %s kernel: %s ====\n", k ? "\n" : "",
         cli_kind_name(key->kind), name);
  if (!o->no_source) {
    char *src = NULL;
    size_t n = 0;
    int rc = uq_kernel_source(key, &src, &n);
    if (rc != 0)
      return cli_fail(CMD, rc, "cannot generate the source");
    fwrite(src, 1, n, stdout);
    if (n > 0 && src[n - 1] != '\n')
      putchar('\n');
    uq_free(src);
  }
  if (o->isa)
    return dump_isa(st, key, name);
  return CLI_EXIT_OK;
}

int cli_cmd_dump(int argc, char **argv) {
  dump_options o;
  int code = dump_parse(argc, argv, &o);
  if (code != CLI_NEXT)
    return code;
  uq_key keys[MAX_KEYS];
  size_t nkeys = 0;
  code = o.nkey_names > 0 ? keys_from_names(&o, keys, &nkeys)
                          : keys_from_plan(&o, keys, &nkeys);
  if (code != CLI_EXIT_OK)
    return code;
  dump_state st;
  memset(&st, 0, sizeof st);
  st.cache_dir = o.cache_dir;
  st.json = o.json;
  if (o.json)
    printf("[");
  for (size_t k = 0; k < nkeys && code == CLI_EXIT_OK; k++)
    code = dump_kernel(&o, &st, &keys[k], k);
  if (o.json)
    printf("]\n");
  uq_context_destroy(st.ctx);
  return code;
}
