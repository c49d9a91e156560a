/* A whole file mapped read-only: what the GGUF and .pfb readers parse, so a file whose format is
 * told by its magic is opened and mapped once. */
#ifndef PF_MAP_FILE_H
#define PF_MAP_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Map the regular file at path (at least min_size bytes, min_size >= 1) into *base / *size. 0, or -1
 * with err: "PATH: cannot open: why", "PATH: not a regular file", "PATH: header: truncated file
 * (N bytes)" or "PATH: mmap failed: why". */
int pf_map_file(const char *path, size_t min_size, const uint8_t **base, size_t *size, char *err);
void pf_unmap_file(const uint8_t *base, size_t size);

#endif
