#include "formats/map_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/errf.h"

int pf_map_file(const char *path, size_t min_size, const uint8_t **base, size_t *size, char *err) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return pf_errf(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return pf_errf(err, "%s: not a regular file", path);
    }
    *size = (size_t)st.st_size;
    if (*size < min_size) { /* an empty file cannot be mapped at all */
        close(fd);
        return pf_errf(err, "%s: header: truncated file (%zu bytes)", path, *size);
    }
    void *map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return pf_errf(err, "%s: mmap failed: %s", path, strerror(errno));
    *base = map;
    return 0;
}

void pf_unmap_file(const uint8_t *base, size_t size) { munmap((void *)base, size); }
