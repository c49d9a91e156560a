/* pocketflash pack / verify: write and check .pfb deployment bundles. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "formats/pfb.h"

static const char k_pack_usage[] =
    "usage: pocketflash pack -m TARGET.gguf [-d DRAFT.gguf] [--profile TUNED.json] -o APP.pfb\n"
    "                        [--level L] [--min-saving P]\n"
    "  writes one bundle holding the target (weights, tokenizer, chat template), optionally a DFlash draft\n"
    "  and a tuned profile; each section is zstd-compressed only where that saves >= 5%\n"
    "  -m FILE          target model (qwen3 GGUF)\n"
    "  -d FILE          draft GGUF (used by 'run -m APP.pfb' unless --spec or -d says otherwise)\n"
    "  --profile FILE   tuned profile (opaque JSON text) stored as its own section\n"
    "  -o FILE          output bundle (written to a temporary file, renamed when complete)\n"
    "  --level L        zstd level for large tensor sections, 1..19 (default 3; small ones get 19)\n"
    "  --min-saving P   store a section compressed only if that saves at least P% (default 5);\n"
    "                   100 stores everything raw (every tensor used in place from the mapping)\n";

static const char k_verify_usage[] =
    "usage: pocketflash verify APP.pfb\n"
    "  checks the header, the section table, every section's xxh3-64 and every model's metadata;\n"
    "  prints 'ok' with the section count, or the first bad section (exit 3; 2 when the file cannot be read)\n";

/* Each section as it is written; *user (size_t) sums their raw sizes. */
static void print_section(void *user, const pfb_section *s) {
    *(size_t *)user += (size_t)s->raw_size;
    printf("  %-8s %-40s %-5s %12llu -> %12llu  ratio %.2f\n", pfb_owner_name(s->owner), s->name,
           pfb_codec_name(s->codec), (unsigned long long)s->raw_size, (unsigned long long)s->stored_size,
           (double)s->raw_size / (double)s->stored_size);
}

int cmd_pack(int argc, char **argv) {
    const char *target = NULL, *draft = NULL, *profile = NULL, *out = NULL;
    long long level = 3, min_saving = 5;
    const cli_arg args[] = {CLI_STR("-m", &target), CLI_STR("-d", &draft), CLI_STR("--profile", &profile),
                            CLI_STR("-o", &out), CLI_LL("--level", &level, 1, 19),
                            CLI_LL("--min-saving", &min_saving, 1, 100), CLI_END};
    int parsed = cli_parse("pack", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_pack_usage, stdout), 0) : 1;
    if (!target || !out) return cli_fail("pack: -m TARGET.gguf and -o APP.pfb are required");
    char err[PF_ERR_LEN];
    int rc = 1;
    gguf_file *t = NULL, *d = NULL;
    char *prof = NULL;
    size_t prof_len = 0;
    pf_rc orc = gguf_open_file(target, &t, err);
    if (orc == PF_RC_OK && draft) orc = gguf_open_file(draft, &d, err);
    if (orc != PF_RC_OK) { rc = cli_fail_status(pf_api_status(orc), err); goto done; }
    if (profile && (rc = cli_read_file(profile, &prof, &prof_len))) goto done;
    rc = 1;
    if (profile && prof_len == 0) { rc = cli_fail_kind(PF_ERR_FORMAT, "%s: the profile is empty", profile); goto done; }
    size_t raw = 0;
    pfb_pack_params pp = {.target = t, .draft = d, .profile = prof, .profile_len = prof_len, .level = (int)level,
                          .min_saving = (int)min_saving, .on_section = print_section, .user = &raw};
    printf("%s:\n  %-8s %-40s %-5s %12s    %12s\n", out, "owner", "section", "codec", "raw bytes", "stored bytes");
    if ((orc = pfb_write(out, &pp, err)) != PF_RC_OK) { rc = cli_fail_status(pf_api_status(orc), err); goto done; }
    size_t src = t->size + (d ? d->size : 0) + prof_len;
    /* read back: the bundle just written must verify; one that does not is pack's own bug */
    int n_sections;
    struct stat sb;
    if ((orc = pfb_verify_file(out, &n_sections, err)) != PF_RC_OK) {
        rc = cli_fail_kind(pf_api_status(orc == PF_RC_FORMAT ? PF_RC_INTERNAL : orc), "pack: reading back %s", err);
        goto done;
    }
    if (stat(out, &sb) != 0) { rc = cli_fail_kind(PF_ERR_IO, "pack: reading back %s: %s", out, strerror(errno)); goto done; }
    size_t size = (size_t)sb.st_size;
    printf("%d sections, %zu bytes (sections %zu raw); source files %zu bytes; compression ratio %.3f\n", n_sections,
           size, raw, src, (double)src / (double)size);
    rc = 0;
done:
    gguf_close(t);
    gguf_close(d);
    free(prof);
    return rc;
}

int cmd_verify(int argc, char **argv) {
    const char *path = NULL;
    const cli_arg args[] = {CLI_POS(&path, 1), CLI_END};
    int parsed = cli_parse("verify", argc, argv, args, 0);
    if (parsed) return parsed < 0 ? (fputs(k_verify_usage, stdout), 0) : 1;
    if (!path) return cli_fail("verify: missing APP.pfb");
    char err[PF_ERR_LEN];
    int n;
    pf_rc rc = pfb_verify_file(path, &n, err);
    if (rc != PF_RC_OK) return cli_fail_status(pf_api_status(rc), err);
    printf("%s: ok, %d sections\n", path, n);
    return 0;
}
