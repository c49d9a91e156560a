/* Fault checks of the CLI's writers and loaders, shared by the tests that own the commands.
 * Each runs ./pocketflash (or $PF_CLI) through sh and reports failures with pf_test_failf. */
#ifndef PF_TEST_FAULT_H
#define PF_TEST_FAULT_H

#include <stddef.h>

/* `pocketflash ARGS` (ARGS holds one %s: the output path) must fail with one error line on stderr
 * ("pocketflash: ..." naming the problem, the last line; a benchmark's progress lines may come
 * before it) and leave no file, neither the output nor a temporary:
 * under `ulimit -f BLOCKS` (512-byte blocks; the message says "File too large"), into a missing
 * folder, and onto an existing folder. LABEL names the scratch folder. 0, or -1 after reporting. */
int pf_fault_writer(const char *label, int blocks, const char *args);

/* `pocketflash ARGS` under `ulimit -v KB`: exits 0, or non-zero with one line on stderr, never by a
 * signal. 0, or -1 after reporting. */
int pf_fault_vm_limit(long kb, const char *args);

/* Runs `pocketflash ARGS` with stderr into ERR (stdout discarded) under the shell prefix PRE
 * ("ulimit -f 8; " or ""); the wait status. */
int pf_fault_run(const char *pre, const char *args, char *err, size_t err_n);

/* An allocation failure injected in this process: its address space capped (RLIMIT_AS) at what it
 * holds now plus extra_kb, so an allocation larger than the heap's free room fails. 0, or -1 where
 * it cannot be done (no /proc/self/statm, a sanitizer's shadow memory): the caller skips.
 * pf_fault_uncap_vm lifts the cap. */
int pf_fault_cap_vm(long extra_kb);
void pf_fault_uncap_vm(void);

/* Whether the test binary carries a sanitizer (whose shadow memory cannot live under ulimit -v). */
int pf_fault_sanitized(void);

#endif
