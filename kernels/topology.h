/* How many threads to run by default: the physical cores this process may use. Decode is
 * memory-bound and verification compute-bound; a second hardware thread of a core adds neither
 * bandwidth nor FMA units, so the default counts cores, not logical CPUs (llama.cpp does the same). */
#ifndef PF_TOPOLOGY_H
#define PF_TOPOLOGY_H

/* Physical cores among the CPUs of this process's affinity mask, from
 * /sys/devices/system/cpu/cpuN/topology/thread_siblings_list (one distinct list per core); when
 * sysfs cannot be read, the number of allowed CPUs; at least 1. */
int pf_physical_cores(void);

/* The same count against a sysfs cpu folder (e.g. "/sys/devices/system/cpu") for the given
 * logical CPUs; CPUs whose topology cannot be read count one core each. For tests. */
int pf_physical_cores_in(const char *cpu_dir, const int *cpus, int n_cpus);

#endif
