/* The reports' markdown heads: the rule under a head has one "---" per cell, whether the head is
 * written cell by cell or in one string. */
#include <string.h>

#include "eval/md_table.h"
#include "test.h"
#include "util.h"

TEST(md_table_rule_follows_the_cells) {
    char out[512];
    test_capture cap;
    test_capture_begin(&cap, 1);
    pf_md_head h = {0};
    pf_md_cell(&h, "task");
    for (int b = 1; b <= 3; b++) pf_md_cell(&h, "B=%d", b);
    pf_md_rule(&h);
    pf_md_head_line("measure | value");
    pf_md_head_line("one");
    test_capture_end(&cap, out, sizeof out);
    CHECKF(!strcmp(out, "| task | B=1 | B=2 | B=3 |\n|---|---|---|---|\n"
                        "| measure | value |\n|---|---|\n"
                        "| one |\n|---|\n"),
           "got:\n%s", out);
}
