/* The chat page `pocketflash serve` answers GET / with: cli/serve_page.html, compiled in by
 * mk/embed.sh (pf_serve_page[pf_serve_page_len] is followed by a NUL). */
#ifndef PF_CLI_SERVE_PAGE_H
#define PF_CLI_SERVE_PAGE_H

#include <stddef.h>

extern const char pf_serve_page[];
extern const size_t pf_serve_page_len;

#endif
