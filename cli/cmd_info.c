/* pocketflash info: metadata, tensors, types and sizes of a GGUF file. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"

static void print_value(const gguf_kv *kv) {
    switch (kv->type) {
    case GGUF_STR: {
        uint64_t n = kv->v.s.len > 120 ? 120 : kv->v.s.len;
        putchar('"');
        for (uint64_t i = 0; i < n; i++) {
            unsigned char ch = (unsigned char)kv->v.s.ptr[i];
            if (ch == '\n') fputs("\\n", stdout);
            else if (ch < 32) printf("\\x%02x", ch);
            else putchar(ch);
        }
        printf("\"%s", kv->v.s.len > n ? "..." : "");
        break;
    }
    case GGUF_ARR: {
        printf("[%s x %llu]", gguf_vtype_name(kv->v.arr.type), (unsigned long long)kv->v.arr.n);
        uint64_t show = kv->v.arr.n < 4 ? kv->v.arr.n : 4;
        if (show) fputs(" ", stdout);
        for (uint64_t i = 0; i < show; i++) {
            if (kv->v.arr.type == GGUF_STR) printf("%s\"%.*s\"", i ? ", " : "", (int)(kv->v.arr.strs[i].len > 24 ? 24 : kv->v.arr.strs[i].len), kv->v.arr.strs[i].ptr);
            else if (kv->v.arr.type == GGUF_F32 || kv->v.arr.type == GGUF_F64) printf("%s%g", i ? ", " : "", gguf_arr_float(kv, i));
            else printf("%s%lld", i ? ", " : "", (long long)gguf_arr_int(kv, i));
        }
        if (kv->v.arr.n > show) fputs(", ...", stdout);
        break;
    }
    case GGUF_F32: case GGUF_F64: printf("%g", kv->v.f); break;
    case GGUF_BOOL: fputs(kv->v.u ? "true" : "false", stdout); break;
    case GGUF_I8: case GGUF_I16: case GGUF_I32: case GGUF_I64: printf("%lld", (long long)kv->v.i); break;
    default: printf("%llu", (unsigned long long)kv->v.u);
    }
}

int cmd_info(int argc, char **argv) {
    const char *path = NULL;
    const cli_arg args[] = {CLI_POS(&path, 1), CLI_END};
    int parsed = cli_parse("info", argc, argv, args, 0);
    if (parsed < 0) puts("usage: pocketflash info MODEL.gguf\n  prints the GGUF version, metadata, and every tensor's shape, type and size");
    if (parsed) return parsed < 0 ? 0 : 1;
    if (!path) return cli_fail("info: missing MODEL.gguf");
    char err[PF_ERR_LEN];
    gguf_file *f;
    pf_rc rc = gguf_open_file(path, &f, err);
    if (rc != PF_RC_OK) return cli_fail_status(pf_api_status(rc), err);
    printf("file: %s\nGGUF version %u, %zu bytes, alignment %llu, %llu metadata keys, %llu tensors\n\n", path,
           f->version, f->size, (unsigned long long)f->alignment, (unsigned long long)f->n_kv,
           (unsigned long long)f->n_tensors);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        printf("%-48.*s %-5s ", (int)f->kv[i].key.len, f->kv[i].key.ptr, gguf_vtype_name(f->kv[i].type));
        print_value(&f->kv[i]);
        putchar('\n');
    }
    size_t total = 0, by_type[PF_TYPE_MAX] = {0};
    uint64_t params = 0;
    printf("\n%-40s %-6s %-24s %12s\n", "tensor", "type", "shape", "bytes");
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const gguf_tensor *t = &f->tensors[i];
        char shape[64];
        int o = snprintf(shape, sizeof shape, "[");
        for (uint32_t d = 0; d < t->n_dims; d++) o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%lld", d ? ", " : "", (long long)t->ne[d]);
        snprintf(shape + o, sizeof shape - (size_t)o, "]");
        printf("%-40.*s %-6s %-24s %12zu\n", (int)t->name.len, t->name.ptr, pf_tensor_type_info(t->type)->name, shape, t->nbytes);
        total += t->nbytes;
        by_type[t->type] += t->nbytes;
        params += (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
    }
    printf("\n%llu parameters, %.2f MiB of tensor data", (unsigned long long)params, total / 1048576.0);
    for (int t = 0; t < PF_TYPE_MAX; t++)
        if (by_type[t]) printf("; %s %.2f MiB", pf_tensor_type_info((uint32_t)t)->name, by_type[t] / 1048576.0);
    putchar('\n');
    gguf_close(f);
    return 0;
}
