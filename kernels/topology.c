#include "kernels/topology.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef char sibling_list[64];

/* thread_siblings_list of one CPU ("0-1", "3,67", ...) without trailing whitespace; 0 if unreadable. */
static int siblings_of(const char *cpu_dir, int cpu, char *out, size_t n) {
    char path[512];
    snprintf(path, sizeof path, "%s/cpu%d/topology/thread_siblings_list", cpu_dir, cpu);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t k = fread(out, 1, n - 1, f);
    fclose(f);
    while (k && (out[k - 1] == '\n' || out[k - 1] == ' ')) k--;
    out[k] = 0;
    return k > 0;
}

int pf_physical_cores_in(const char *cpu_dir, const int *cpus, int n_cpus) {
    if (n_cpus <= 0) return 1;
    sibling_list *lists = malloc((size_t)n_cpus * sizeof *lists);
    if (!lists) return n_cpus;
    int cores = 0;
    for (int i = 0; i < n_cpus; i++) {
        sibling_list s;
        /* unknown topology: a core of its own (a name no sysfs list can have) */
        if (!siblings_of(cpu_dir, cpus[i], s, sizeof s)) snprintf(s, sizeof s, "?%d", cpus[i]);
        int dup = 0;
        for (int j = 0; j < cores && !dup; j++) dup = !strcmp(lists[j], s);
        if (!dup) memcpy(lists[cores++], s, sizeof s);
    }
    free(lists);
    return cores;
}

int pf_physical_cores(void) {
    cpu_set_t set;
    int cpus[CPU_SETSIZE], n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set)) cpus[n++] = c;
    } else {
        long on = sysconf(_SC_NPROCESSORS_ONLN);
        for (int c = 0; c < (on > 0 && on < CPU_SETSIZE ? on : 1); c++) cpus[n++] = c;
    }
    return pf_physical_cores_in("/sys/devices/system/cpu", cpus, n);
}
