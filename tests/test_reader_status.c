/* The task folder's reader reports the kind of what failed, and the commands that read one
 * (bench, tune, demo) exit with it (docs/cli.md#exit-status): a folder that cannot be opened 2, a
 * line that is not a task record 3, a folder without task prompts 1. Runs ./pocketflash (or $PF_CLI). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "test.h"
#include "util.h"

#define TARGET "models/pf-target-f16.gguf"
#define DRAFT "models/pf-draft-dflash2.gguf"

TEST(reader_status_task_folder_kinds_reach_the_exit_status) {
    char bad[300], empty[300], path[400];
    test_tmp_path(bad, sizeof bad, "tasks-malformed");
    test_tmp_path(empty, sizeof empty, "tasks-empty");
    mkdir(bad, 0755);
    mkdir(empty, 0755);
    snprintf(path, sizeof path, "%s/chat.jsonl", bad);
    CHECK(test_write_file(path, "{\"type\": \"chat\", \"prompt\": \"hi\"}\n{\"type\": \"chat\", \"prompt\": \n",
                          (size_t)-1) == 0);
    static const char *const cmds[] = {
        "bench -m " TARGET " --prompts 1 -n 2 --reps 1 --tasks",
        "tune -m " TARGET " --prompts 1 -o /dev/null --tasks",
        "demo -m " TARGET " -d " DRAFT " --prompts 1 -n 2 --reps 1 --tasks",
    };
    const struct { const char *dir, *msg; int want; } cases[] = {
        {"/nonexistent/tasks", "/nonexistent/tasks: cannot open the task folder", 2},
        {bad, "chat.jsonl:2: ", 3},
        {empty, "no task prompts found", 1},
    };
    for (size_t c = 0; c < sizeof cmds / sizeof *cmds; c++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            char args[1000], o[4096], e[4096];
            snprintf(args, sizeof args, "%s %s", cmds[c], cases[k].dir);
            int rc = RUN_CLI(args, o, e);
            CHECKF(rc == cases[k].want && test_count_lines(e) == 1 && strstr(e, cases[k].msg), "%.60s: exit %d (want %d), '%s'",
                   args, rc, cases[k].want, e);
        }
}
