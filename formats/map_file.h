/* A whole file mapped read-only: what the GGUF and .pfb readers parse, so a file whose format is
 * told by its magic is opened and mapped once. */
#ifndef PF_MAP_FILE_H
#define PF_MAP_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "formats/status.h"

/* Map the regular file at path (at least min_size bytes, min_size >= 1) into *base / *size.
 * PF_RC_OK, or with err PF_RC_IO ("PATH: cannot open: why", "PATH: not a regular file", "PATH: mmap
 * failed: why"), PF_RC_FORMAT ("PATH: header: truncated file (N bytes)") or PF_RC_OOM (the kernel
 * had no memory for the mapping). */
pf_rc pf_map_file(const char *path, size_t min_size, const uint8_t **base, size_t *size, char *err);
void pf_unmap_file(const uint8_t *base, size_t size);

#endif
